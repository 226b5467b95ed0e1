#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Fortran textbook example prints what the C worked example prints
# (whose numbers tests/worked_example.sh checks), line for line, for the
# textbook query and others (a zero normalizer, tiny and huge numbers),
# and refuses a malformed query.
b=${top_builddir:-.}
f=$b/examples/fortran/textbook
c=$b/examples/worked_example
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
status=0
for query in "" "0 1" "-0.5 2.25" "5 -2" "1e-7 3" "123456789 0.5"; do
    # shellcheck disable=SC2086
    "$c" $query > "$out/c" 2>&1
    # shellcheck disable=SC2086
    "$f" $query > "$out/f" 2>&1 || { echo "textbook $query failed"; status=1; }
    if cmp -s "$out/c" "$out/f"; then
        echo "query (${query:-1 0}): the same as the C example"
    else
        echo "query (${query:-1 0}): differs from the C example:"
        diff "$out/c" "$out/f"
        status=1
    fi
done
"$f" | grep 'output 4.5$' || status=1
if "$f" 1 x 2>/dev/null; then echo "a malformed query was accepted"; status=1; fi
exit $status
