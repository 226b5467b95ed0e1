#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The documents' snippets are programs people paste: every ```c block of
# README.md and doc/guide.md is cut out as it stands (one program per
# block), compiled against the build tree with warnings as errors, and
# run (twice, in a scratch directory: a snippet that keeps files must
# also work when they are there); each must exit 0.  Messages name the
# file and the block ("doc/guide.md, C block 3").
# Run from the top build directory (make check).
set -u
docs="README.md doc/guide.md"
work=$(mktemp -d "${TMPDIR:-/tmp}/linattn-snippets.XXXXXX")
trap 'rm -rf "$work"' EXIT
build=$(pwd)
status=0
total=0
for doc in $docs; do
    path=${srcdir:-.}/$doc
    [ -f "$path" ] || { echo "readme_snippets: no $path" >&2; status=1; continue; }
    tag=$(echo "$doc" | tr '/.' '__')
    awk -v dir="$work" -v tag="$tag" '
        /^```c$/ { n++; file = sprintf("%s/%s_%d.c", dir, tag, n); inblock = 1; next }
        /^```/   { inblock = 0; next }
        inblock  { print > file }
    ' "$path"
    count=$(ls "$work/${tag}"_*.c 2>/dev/null | wc -l)
    [ "$count" -gt 0 ] || { echo "readme_snippets: no C snippet found in $doc" >&2; status=1; continue; }
    i=0
    while [ $i -lt "$count" ]; do
        i=$((i + 1))
        c=$work/${tag}_$i.c
        name=${tag}_$i
        what="$doc, C block $i ($(head -n 1 "$c"))"
        # the build's compiler and flags (a sanitizer build's among them)
        # shellcheck disable=SC2086
        if ! ./libtool --mode=link --tag=CC ${CC:-cc} ${CFLAGS:-} -std=c99 -Wall -Wextra \
                -Werror -I"$build/include" -I"${srcdir:-.}/include" ${LDFLAGS:-} \
                -o "$work/$name" "$c" lib/liblinattn.la -lm > "$work/$name.log" 2>&1; then
            cat "$work/$name.log"
            echo "readme_snippets: $what does not compile" >&2
            status=1
            continue
        fi
        ok=1
        for run in 1 2; do
            if ! (cd "$work" && "$build/libtool" --mode=execute "./$name") > "$work/$name.out" 2>&1; then
                cat "$work/$name.out"
                echo "readme_snippets: $what failed on run $run" >&2
                status=1
                ok=0
                break
            fi
        done
        [ $ok = 1 ] && echo "ok: $what"
    done
    echo "readme_snippets: $doc: $count C snippets"
    total=$((total + count))
done
echo "readme_snippets: $total C snippets in $docs"
exit $status
