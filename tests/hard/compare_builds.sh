#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# compare_builds.sh OLD_BUILD NEW_BUILD [CASES]: the traces of every public
# call (tests/hard/trace_calls.c) against two builds of liblinattn, at one
# and at two threads, must be identical -- for a change that must change
# no status, row or output bit (a restructuring).  OLD_BUILD and NEW_BUILD
# are build directories (with lib/.libs/liblinattn.so); the tracer is
# compiled once, against NEW_BUILD's headers, and run with each library.
# Prints the first differing lines and fails when the traces differ.
set -u
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILD NEW_BUILD [CASES]" >&2; exit 2; }
old=$1 new=$2 cases=${3:-30000}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/linattn-trace.XXXXXX")
trap 'rm -rf "$work"' EXIT
${CC:-cc} -O1 -I"$new/include" -I"$src/include" \
    "$src/tests/hard/trace_calls.c" -o "$work/trace" \
    -L"$new/lib/.libs" -llinattn -lm || exit 1
status=0
for threads in 1 2; do
    for side in old new; do
        eval dir=\$$side
        LD_LIBRARY_PATH="$dir/lib/.libs" OMP_NUM_THREADS=$threads \
            "$work/trace" "$cases" > "$work/$side.txt" 2>/dev/null ||
            { echo "the trace against $dir failed" >&2; exit 1; }
    done
    if cmp -s "$work/old.txt" "$work/new.txt"; then
        echo "$threads thread(s): $cases cases, $(wc -l < "$work/new.txt") lines, identical"
    else
        echo "$threads thread(s): the traces differ (< old, > new):"
        diff "$work/old.txt" "$work/new.txt" | head -20
        status=1
    fi
done
exit $status
