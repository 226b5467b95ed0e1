#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPI example (examples/mpi/causal_mpi) end to end: two segments
# (a fresh start, then a restart from its collective checkpoint) on 1 and
# on 3 ranks; the checksums of both segments must agree to 10 digits
# across rank counts, and the checkpoint must hold both segments' tokens.
launch="$(dirname "$0")/launch.sh"
prog=examples/mpi/causal_mpi
[ -x "$prog" ] || { echo "example.sh: $prog not built" >&2; exit 99; }
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
run="${LIBTOOL:+$LIBTOOL --mode=execute}"
for np in 1 3; do
    for segment in 1 2; do
        # shellcheck disable=SC2086
        timeout -k 10 120 $run sh "$launch" $np "$prog" 3001 "$dir/np$np.ck" \
            > "$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
        cat "$dir/out"
        grep -o 'checksum [-0-9.e+]*' "$dir/out" | cut -c1-20 >> "$dir/sums$np"
        grep -q "holds $((segment * 3001)) tokens" "$dir/out" || exit 1
    done
done
cmp "$dir/sums1" "$dir/sums3" || { echo "checksums differ across rank counts" >&2; exit 1; }
