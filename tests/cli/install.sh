#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install / uninstall into a temporary DESTDIR with PREFIX=/usr: the files a package holds are
# there, the man page renders, and the API example compiles with pkg-config against the installed
# tree and predicts what the README states for the naive RS+AG lifetime (576 MiB = 603979776 B
# requested peak at 4 ranks). Then uninstall leaves no file behind.
. "$(dirname "$0")/lib.bash"

D=$TMP/destdir
if ! make -s --no-print-directory BUILD="$BUILD" install PREFIX=/usr DESTDIR="$D" >"$TMP/make.out" 2>&1; then
    not_ok "make install" "$(tail -5 "$TMP/make.out" | tr '\n' '|')"
    exit 0
fi
missing=""
for f in bin/memlife share/man/man1/memlife.1 share/bash-completion/completions/memlife \
    share/doc/memlife/README.md share/doc/memlife/schedules/seed/03_rs_ag_naive.yaml \
    share/doc/memlife/examples/ci_gate/.github/workflows/memlife.yml \
    share/doc/memlife/examples/api/predict.c include/memlife.h lib/libmemlife.a \
    lib/libmemlife.so lib/pkgconfig/memlife.pc; do
    [ -e "$D/usr/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "make install PREFIX=/usr DESTDIR puts every file"; else not_ok "make install PREFIX=/usr DESTDIR puts every file" "missing:$missing"; fi

# the installed binary is the built one and runs from there
if "$D/usr/bin/memlife" --version | head -1 | grep -q '^memlife '; then ok "installed memlife runs"; else not_ok "installed memlife runs" "no version line"; fi

if command -v man >/dev/null; then
    if MANWIDTH=80 man -l "$D/usr/share/man/man1/memlife.1" 2>"$TMP/man.err" >"$TMP/man.out" &&
        grep -q '^NAME' "$TMP/man.out" && grep -q 'memlife check' "$TMP/man.out" &&
        grep -q -- '--baseline' "$TMP/man.out" && [ ! -s "$TMP/man.err" ]; then
        ok "man -l renders memlife.1 (NAME, every command, no warnings)"
    else
        not_ok "man -l renders memlife.1" "$(head -3 "$TMP/man.err" | tr '\n' '|')"
    fi
else
    echo "skip - man -l renders memlife.1: man is not installed (apt-get install man-db)"
fi

# the man page is what the binary says now: generated, not copied
if "$MEMLIFE" help --man | cmp -s - "$D/usr/share/man/man1/memlife.1"; then ok "installed man page = memlife help --man"; else not_ok "installed man page = memlife help --man" "differs"; fi

if command -v pkg-config >/dev/null; then
    export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$D/usr/lib/pkgconfig PKG_CONFIG_LIBDIR=$D/usr/lib/pkgconfig
    flags=$(pkg-config --cflags --libs memlife)
    # a SANITIZE=1 build installs an ASan library: the program must load ASan's runtime first
    if ldd "$MEMLIFE" 2>/dev/null | grep -q libasan; then
        flags="-fsanitize=address,undefined $flags"
    fi
    if ${CC:-cc} -o "$TMP/predict" examples/api/predict.c $flags 2>"$TMP/cc.err"; then
        LD_LIBRARY_PATH=$D/usr/lib "$TMP/predict" schedules/seed/03_rs_ag_naive.yaml >"$TMP/api.out" 2>&1
        if grep -qx 'rs-ag-naive-lifetime world 4 requested peak 603979776 device peak 603979776' "$TMP/api.out"; then
            ok "examples/api/predict.c builds with pkg-config against the installed tree and predicts 576 MiB"
        else
            not_ok "installed API example" "got: $(head -2 "$TMP/api.out" | tr '\n' '|')"
        fi
    else
        not_ok "installed API example builds" "$(head -3 "$TMP/cc.err" | tr '\n' '|')"
    fi
    unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
else
    echo "skip - installed API example: pkg-config is not installed"
fi

make -s --no-print-directory BUILD="$BUILD" uninstall PREFIX=/usr DESTDIR="$D" >/dev/null 2>&1
left=$(find "$D" -type f -o -type l | sed "s|$D/||")
if [ -z "$left" ]; then ok "make uninstall removes every installed file"; else not_ok "make uninstall removes every installed file" "left: $(echo $left)"; fi
