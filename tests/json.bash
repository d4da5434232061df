# SPDX-License-Identifier: MIT
# tests/json.bash — the JSON hook every test library sources (tests/cli/lib.bash, tests/mpi/
# lib.bash, tests/gpu/lib.bash; the scripts with their own temporary folder source it directly):
# at the end of a script, every memlife JSON document left in its temporary folder validates
# against schemas/ (tests/json_collect.py prints one ok / not ok line). JSON that went to stdout
# and is overwritten by the next case is kept first by json_keep.

# json_keep FILE DIR: a copy of FILE under DIR/.json-kept when it holds a JSON object.
json_keep() {
    [ -s "$1" ] && [ "$(head -c 1 "$1")" = "{" ] || return 0
    mkdir -p "$2/.json-kept"
    JSON_KEPT=$((${JSON_KEPT:-0} + 1))
    cp "$1" "$2/.json-kept/$JSON_KEPT.json"
}

# json_ignore DIR FILE...: FILE is a test's own (deliberately wrong) JSON, not memlife's output.
json_ignore() {
    local dir=$1
    shift
    printf '%s\n' "$@" >>"$dir/.json-ignore"
}

# json_collect DIR: validates what DIR holds (the python3 on PATH, with jsonschema: tests/run.sh puts
# .venv's first; none: nothing printed).
json_collect() {
    [ -d "$1" ] || return 0
    local py
    py=$(command -v python3) || return 0
    "$py" "$(dirname "${BASH_SOURCE[0]}")/json_collect.py" "$(basename "$0" .sh)" "$1"
}
