#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/deps.sh (`make deps`; `make demo` and `make test` call it) — installs what memlife builds
# and tests with, and only what is missing:
#   1. the system packages (Debian/Ubuntu, with apt-get as root or through sudo): the compiler,
#      libyaml, jansson, cmocka, Open MPI, jq, pkg-config, man-db, chromium (plots rendered to
#      PNG in the tests);
#   2. a Python environment in .venv with PyTorch (the torch backend, `memlife capture`, the
#      snapshot tests), jsonschema (every JSON result validated against schemas/) and pytest;
#      PyTorch is pinned to 2.13.0: pip takes a CPU build of it where one lies in its find-links,
#      PyPI's build elsewhere. MEMLIFE_TORCH overrides the requirement (MEMLIFE_TORCH=torch==2.11.0);
#   3. NCCL's header and library from PyPI (nvidia-nccl-cu13, the NCCL the GPU machines run)
#      into .venv, when the CUDA toolkit is there but no nccl.h is: the cuda backend then builds.
# A second call finds everything and installs nothing (a stamp in .venv remembers the Python
# part). Without root or sudo, or without apt-get, it names what to install and goes on; it
# exits 2 only when something the build itself needs is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${MEMLIFE_VENV:-.venv}
TORCH_REQ=${MEMLIFE_TORCH:-torch==2.13.0}
NCCL_REQ=nvidia-nccl-cu13==2.28.9
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
say() { printf 'deps: %s\n' "$*"; }

# --- 1. system packages: package -> what shows it is there ----------------------------------
declare -A BUILD_NEED=(
    [build-essential]="command -v cc && command -v make"
    [libyaml-dev]="test -f /usr/include/yaml.h"
    [libjansson-dev]="test -f /usr/include/jansson.h"
)
declare -A TEST_NEED=(
    [libcmocka-dev]="test -f /usr/include/cmocka.h"
    [openmpi-bin]="command -v mpirun"
    [libopenmpi-dev]="command -v mpicc"
    [python3]="command -v python3"
    [jq]="command -v jq"
    [pkg-config]="command -v pkg-config"
    [man-db]="command -v man"
    [chromium]="command -v chromium || command -v chromium-browser"
    [git]="command -v git"
    [iproute2]="command -v ip"
)
missing_build=() missing_test=()
for pkg in "${!BUILD_NEED[@]}"; do
    eval "${BUILD_NEED[$pkg]}" >/dev/null 2>&1 || missing_build+=("$pkg")
done
for pkg in "${!TEST_NEED[@]}"; do
    eval "${TEST_NEED[$pkg]}" >/dev/null 2>&1 || missing_test+=("$pkg")
done
missing=("${missing_build[@]}" "${missing_test[@]}")
if [ ${#missing[@]} -gt 0 ]; then
    SUDO= can=1
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=sudo; else can=0; fi
    fi
    command -v apt-get >/dev/null || can=0
    if [ $can = 1 ]; then
        say "installing ${missing[*]} with apt-get"
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}"
    else
        say "missing: ${missing[*]}; install them (apt-get as root, or your distribution's equivalents)" >&2
        if [ ${#missing_build[@]} -gt 0 ]; then
            echo "error: the build needs ${missing_build[*]}" >&2
            exit 2
        fi
    fi
fi

# --- 2. the Python environment ----------------------------------------------------------------
need_nccl=0
if [ -f "$CUDA_HOME/include/cuda_runtime.h" ] && [ ! -f "$CUDA_HOME/include/nccl.h" ] &&
    [ ! -f /usr/include/nccl.h ]; then
    need_nccl=1
fi
want="$TORCH_REQ jsonschema pytest numpy"
[ $need_nccl = 1 ] && want="$want $NCCL_REQ"
stamp=$VENV/memlife-deps
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] &&
    "$VENV/bin/python" -c 'import torch, jsonschema, pytest' 2>/dev/null; then
    exit 0
fi
if ! command -v python3 >/dev/null; then
    say "no python3: the torch backend, capture and the JSON schema checks will be skipped" >&2
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV (python3 -m venv)"
    if ! python3 -m venv "$VENV"; then
        rm -rf "$VENV"
        say "python3 -m venv failed (Debian: apt-get install python3-venv); the Python tests will be skipped" >&2
        exit 0
    fi
fi
say "installing $want into $VENV"
# shellcheck disable=SC2086
if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check $want; then
    say "pip could not install $want; the Python tests will be skipped" >&2
    exit 0
fi
echo "$want" >"$stamp"
"$VENV/bin/python" -c 'import torch; print("deps: torch", torch.__version__, "in '"$VENV"'")'
