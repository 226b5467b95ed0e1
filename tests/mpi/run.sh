#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/mpi/run.sh NP -- the MPI test programs under mpirun with NP ranks
# (make check runs np1.sh .. np4.sh, each calling this).  Each program
# runs under a timeout, so that a rank left waiting in a collective fails
# the test instead of hanging it.  Prints one closing line in Check's
# format for the whole set (.ci/run counts it).
#
# Environment (make check sets them): MPIEXEC, the launcher (run through
# launch.sh); LIBTOOL, to run the uninstalled programs; MPI_TEST_TIMEOUT
# (seconds, default 300); MPI_TEST_MAX_NP, the most ranks to run (more:
# skipped; make check-hard's sanitizer build sets it).
np=${1:?usage: run.sh NP}
if [ -n "${MPI_TEST_MAX_NP:-}" ] && [ "$np" -gt "$MPI_TEST_MAX_NP" ]; then
    echo "run.sh: $np ranks, above MPI_TEST_MAX_NP=$MPI_TEST_MAX_NP: skipped" >&2
    exit 77
fi
# the build tree's tests/mpi: where make check runs us from
build=${MPI_TEST_DIR:-tests/mpi}
launcher=${MPIEXEC:-mpiexec}
if ! command -v "$launcher" >/dev/null 2>&1; then
    echo "run.sh: no MPI launcher ($launcher): skipped" >&2
    exit 77
fi
launch="$(dirname "$0")/launch.sh"
# Two threads per rank would oversubscribe the cores np times over.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
run="${LIBTOOL:+$LIBTOOL --mode=execute}"
checks=0 failures=0 status=0
for prog in test_mpi_d test_mpi_s test_mpi_finite_d test_mpi_finite_s \
    test_mpi_packed_d test_mpi_packed_s test_mpi_grad_d test_mpi_grad_s \
    test_mpi_decay_d test_mpi_decay_s test_mpi_grad_packed_d test_mpi_grad_packed_s \
    test_mpi_single test_f_mpi test_f_mpi_init; do
    [ -x "$build/$prog" ] || continue
    log=$(mktemp)
    # shellcheck disable=SC2086
    timeout -k 10 "${MPI_TEST_TIMEOUT:-300}" $run sh "$launch" "$np" \
        "$build/$prog" > "$log" 2>&1
    rc=$?
    # one closing line per np (below): the programs' own are indented
    sed -E "s/^([0-9]+%: Checks: )/    $prog: \1/" "$log"
    line=$(grep -m1 -E '^[0-9]+%: Checks: ' "$log")
    if [ -n "$line" ]; then
        n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
        f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
        checks=$((checks + n)); failures=$((failures + f))
    fi
    if [ "$rc" != 0 ]; then
        [ "$rc" = 124 ] && echo "$prog: timed out (np $np): a rank hung" >&2
        echo "$prog: exit $rc (np $np)" >&2
        [ -z "$line" ] && { checks=$((checks + 1)); failures=$((failures + 1)); }
        status=1
    fi
    rm -f "$log"
done
echo "$(( checks ? 100 * (checks - failures) / checks : 100 ))%: Checks: $checks, Failures: $failures, Errors: 0"
exit $status
