# tools/tap_summary.bash — the end of a GPU session script, sourced by tools/gpu_*.sh.
#
# tap_summary TMP LOG: appends to TMP (a session's output) a summary — every `not ok - ` line and
# "N passed, N failed, N skipped" — prints it, moves TMP to LOG, and returns 0 when no line
# failed, 1 otherwise.
tap_summary() {
    local tmp=$1 log=$2 ok bad skip
    ok=$(grep -c '^ok - ' "$tmp")
    bad=$(grep -c '^not ok - ' "$tmp")
    skip=$(grep -c '^skip - ' "$tmp")
    {
        echo "## summary"
        grep '^not ok - ' "$tmp"
        echo "$ok passed, $bad failed, $skip skipped"
    } | tee -a "$tmp"
    mv "$tmp" "$log"
    [ "$bad" -eq 0 ]
}
