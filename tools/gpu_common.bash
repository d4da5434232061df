# SPDX-License-Identifier: MIT
# tools/gpu_common.bash — what the GPU session scripts share, sourced by tools/gpu_*.sh from the
# repository root.

# build_commit: the commit the carried binary was built from (its --version says it; the device's
# checkout may lag behind: only the working tree is copied there).
build_commit() {
    "${BUILD:-build}/memlife" --version 2>/dev/null | sed -n 's/.*(\([^)]*\)).*/\1/p' | head -n 1
}

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
