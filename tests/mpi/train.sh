#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The distributed training example (examples/mpi/train_mpi, and
# train_mpi_f, its Fortran twin, when built) at 1, 2 and 4 ranks: the
# loss must fall below 1% of the first (the programs' exit status), and
# every printed loss must be the same, to rounding (10 digits), at every
# rank count and in both languages: the distributed backward gives every
# rank the gradients of the whole sequence.
launch="$(dirname "$0")/launch.sh"
progs=examples/mpi/train_mpi
[ -x examples/mpi/train_mpi_f ] && progs="$progs examples/mpi/train_mpi_f"
[ -x examples/mpi/train_mpi ] || { echo "train.sh: train_mpi not built" >&2; exit 99; }
dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1
run="${LIBTOOL:+$LIBTOOL --mode=execute}"
for prog in $progs; do
    name=$(basename "$prog")
    for np in 1 2 4; do
        # shellcheck disable=SC2086
        timeout -k 10 300 $run sh "$launch" $np "$prog" 400 > "$dir/out" 2>&1 ||
            { cat "$dir/out"; echo "$name on $np ranks failed" >&2; exit 1; }
        cat "$dir/out"
        grep '^step' "$dir/out" | awk '{print $2, $4}' > "$dir/loss-$name-$np"
        [ -s "$dir/loss-$name-$np" ] || exit 1
    done
done
# every run against the C program on one rank: the same steps, losses
# equal to 1e-10 relative
for f in "$dir"/loss-*; do
    awk 'NR == FNR { ref[$1] = $2; next }
         !($1 in ref) { print "step " $1 " missing"; bad = 1; next }
         { d = $2 - ref[$1]; if (d < 0) d = -d; r = ref[$1] < 0 ? -ref[$1] : ref[$1];
           if (d > 1e-10 * r) { print "step " $1 ": " $2 " against " ref[$1]; bad = 1 } }
         END { exit bad }' "$dir/loss-train_mpi-1" "$f" ||
        { echo "$(basename "$f"): the loss differs from one rank's" >&2; exit 1; }
done
echo "train.sh: the same losses at 1, 2 and 4 ranks ($progs)"
