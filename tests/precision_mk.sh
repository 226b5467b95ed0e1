#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/precision.mk is what tests/gen_precision_mk.pl makes of
# tests/precision.list (both are committed; this fails when one changed
# without the other, naming the command that brings them together).
src=${top_srcdir:-.}
out=${TMPDIR:-/tmp}/precision_mk.$$
trap 'rm -f "$out"' EXIT
"${PERL:-perl}" "$src/tests/gen_precision_mk.pl" "$src/tests/precision.list" \
    > "$out" || exit 1
if ! cmp -s "$out" "$src/tests/precision.mk"; then
    diff -u "$src/tests/precision.mk" "$out"
    echo "tests/precision.mk is stale: perl tests/gen_precision_mk.pl" \
        "tests/precision.list > tests/precision.mk" >&2
    exit 1
fi
echo "tests/precision.mk matches tests/precision.list"
