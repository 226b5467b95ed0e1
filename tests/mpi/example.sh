#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPI examples (examples/mpi/causal_mpi, and causal_mpi_f, its Fortran
# twin, when built) end to end: two segments (a fresh start, then a
# restart from its collective checkpoint) on 1 and on 3 ranks; the
# checksums of both segments must agree to 10 digits across rank counts
# and languages, and the checkpoint must hold both segments' tokens.  A
# checkpoint that exists but cannot be read (a symbolic link to itself)
# stops the program before any work and is left as it was: a read error
# never restarts the run from token 0 over the good checkpoint.
launch="$(dirname "$0")/launch.sh"
progs=examples/mpi/causal_mpi
[ -x examples/mpi/causal_mpi_f ] && progs="$progs examples/mpi/causal_mpi_f"
[ -x examples/mpi/causal_mpi ] || { echo "example.sh: causal_mpi not built" >&2; exit 99; }
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
run="${LIBTOOL:+$LIBTOOL --mode=execute}"
for prog in $progs; do
    name=$(basename "$prog")
    for np in 1 3; do
        for segment in 1 2; do
            # shellcheck disable=SC2086
            timeout -k 10 120 $run sh "$launch" $np "$prog" 3001 "$dir/$name$np.ck" \
                > "$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
            cat "$dir/out"
            grep -o 'checksum [-0-9.eE+]*' "$dir/out" | sed 's/E/e/' | cut -c1-20 \
                >> "$dir/sums-$name-$np"
            grep -q "holds $((segment * 3001)) tokens" "$dir/out" || exit 1
        done
    done
    cmp "$dir/sums-$name-1" "$dir/sums-$name-3" ||
        { echo "$name: checksums differ across rank counts" >&2; exit 1; }
    cmp "$dir/sums-causal_mpi-1" "$dir/sums-$name-1" ||
        { echo "$name: checksums differ from the C program's" >&2; exit 1; }
    # an unreadable checkpoint: a failure, before any attention, link kept
    ln -s "$dir/loop.ck" "$dir/loop.ck"
    # shellcheck disable=SC2086
    if timeout -k 10 120 $run sh "$launch" 2 "$prog" 3001 "$dir/loop.ck" \
            > "$dir/out" 2>&1; then
        cat "$dir/out"; echo "$name: ran over an unreadable checkpoint" >&2; exit 1
    fi
    if grep -q 'tokens \[' "$dir/out" || [ ! -L "$dir/loop.ck" ]; then
        cat "$dir/out"; echo "$name: an unreadable checkpoint was overwritten" >&2; exit 1
    fi
    echo "$name: an unreadable checkpoint stops the run, left as it was"
    rm -f "$dir/loop.ck"
done
