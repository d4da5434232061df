#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/deb.sh [OUTDIR] — builds the Debian packages (debian/: memlife, libmemlife0,
# libmemlife-dev) with `dpkg-buildpackage -us -uc -b` in a copy of the tree (the tracked and
# untracked, not ignored, files, plus COMMIT as make dist writes it), so the checkout's build/
# and ./memlife are left alone and the .debs land in OUTDIR (default: a new temporary folder),
# not in the checkout's parent. Then checks with dpkg -c that memlife's package holds the binary
# and the man page, and libmemlife-dev the header, memlife.pc and the library, and runs the
# packaged binary on a packaged example. Prints the .deb paths; exit 1 when a check fails, 2 when
# the build does.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/memlife-deb.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/memlife-$(cat VERSION)
rm -rf "$src"
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - | tar -xf - -C "$src"
git rev-parse --short=12 HEAD >"$src/COMMIT"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log" >&2
    echo "error: dpkg-buildpackage failed (log: $out/build.log)" >&2
    exit 2
fi
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
fail=0
# has DEB PATH...: every PATH is a file of DEB (dpkg -c lists them as ./PATH).
has() {
    local deb=$1 path
    shift
    for path in "$@"; do
        # awk reads the whole listing: `grep -q` quit at the first match, and under pipefail
        # dpkg's SIGPIPE then failed a package that has the file (the longer the listing, the
        # likelier)
        if dpkg -c "$deb" | awk -v p="./$path" '$6 == p { found = 1 } END { exit !found }'; then
            echo "ok - $(basename "$deb") has /$path"
        else
            echo "not ok - $(basename "$deb") has no /$path"
            fail=1
        fi
    done
}
has "$out/memlife_${version}_${arch}.deb" usr/bin/memlife usr/share/man/man1/memlife.1.gz \
    usr/share/bash-completion/completions/memlife usr/share/doc/memlife/README.md.gz \
    usr/share/doc/memlife/schedules/seed/01_allreduce_full.yaml
has "$out/libmemlife0_${version}_${arch}.deb" "usr/lib/$multi/libmemlife.so.0"
has "$out/libmemlife-dev_${version}_${arch}.deb" usr/include/memlife.h \
    "usr/lib/$multi/libmemlife.a" "usr/lib/$multi/pkgconfig/memlife.pc"
# The packaged binary runs the packaged example: allreduce-full's 256 MiB at world 4.
root=$out/root
rm -rf "$root"
dpkg -x "$out/memlife_${version}_${arch}.deb" "$root"
if "$root/usr/bin/memlife" check "$root/usr/share/doc/memlife/schedules/seed/01_allreduce_full.yaml" \
    -w 4 | grep -q '^pass  allreduce-full  world 4  requested 256 MiB / 256 MiB'; then
    echo "ok - the packaged memlife checks the packaged seed schedule"
else
    echo "not ok - the packaged memlife checks the packaged seed schedule"
    fail=1
fi
ls "$out"/*.deb
exit $fail
