#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The training example (examples/train_map.c): gradient descent on a
# trained map's W and b through the library's causal forward and backward
# calls.  The loss it prints every 50 steps must fall each time, and the
# program itself exits 1 unless the last loss is below 1% of the first.
ex=${top_builddir:-.}/examples/train_map
out=$("$ex") || { echo "$out"; echo "train_map: the loss did not fall enough" >&2; exit 1; }
echo "$out"
echo "$out" | awk '/^step/ { if (n++ && !($4 < last)) bad = 1; last = $4 }
                   END { exit (n < 5 || bad) }' || {
    echo "train_map: the printed losses do not fall step after step" >&2
    exit 1
}
exit 0
