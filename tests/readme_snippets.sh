#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# README snippets are programs people paste: every ```c block of the
# README is cut out as it stands, compiled against the build tree with
# warnings as errors, and run (twice, in a scratch directory: a snippet
# that keeps files must also work when they are there); each must exit 0.
# Run from the top build directory (make check).
set -u
readme=${srcdir:-.}/README.md
work=$(mktemp -d "${TMPDIR:-/tmp}/linattn-snippets.XXXXXX")
trap 'rm -rf "$work"' EXIT
build=$(pwd)
awk -v dir="$work" '
    /^```c$/ { n++; file = sprintf("%s/snippet%d.c", dir, n); inblock = 1; next }
    /^```/   { inblock = 0; next }
    inblock  { print > file }
' "$readme"
count=$(ls "$work"/snippet*.c 2>/dev/null | wc -l)
[ "$count" -gt 0 ] || { echo "readme_snippets: no C snippet found in $readme" >&2; exit 1; }
status=0
for c in "$work"/snippet*.c; do
    name=$(basename "$c" .c)
    first=$(head -n 1 "$c")
    # the build's compiler and flags (a sanitizer build's among them)
    # shellcheck disable=SC2086
    if ! ./libtool --mode=link --tag=CC ${CC:-cc} ${CFLAGS:-} -std=c99 -Wall -Wextra \
            -Werror -I"$build/include" -I"${srcdir:-.}/include" ${LDFLAGS:-} \
            -o "$work/$name" "$c" lib/liblinattn.la > "$work/$name.log" 2>&1; then
        cat "$work/$name.log"
        echo "readme_snippets: $name ($first) does not compile" >&2
        status=1
        continue
    fi
    ok=1
    for run in 1 2; do
        if ! (cd "$work" && "$build/libtool" --mode=execute "./$name") > "$work/$name.out" 2>&1; then
            cat "$work/$name.out"
            echo "readme_snippets: $name ($first) failed on run $run" >&2
            status=1
            ok=0
            break
        fi
    done
    [ $ok = 1 ] && echo "$name ok: $first"
done
echo "readme_snippets: $count C snippets"
exit $status
