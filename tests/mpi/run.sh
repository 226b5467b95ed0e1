#!/bin/sh
# tests/mpi/run.sh NP -- the MPI test programs under mpirun with NP ranks
# (make check runs np1.sh .. np4.sh, each calling this).  Each program
# runs under a timeout, so that a rank left waiting in a collective fails
# the test instead of hanging it.  Prints one closing line in Check's
# format for the whole set (.ci/run counts it).
#
# Environment (make check sets them): MPIEXEC, the launcher; LIBTOOL, to
# run the uninstalled programs; MPI_TEST_TIMEOUT (seconds, default 300).
np=${1:?usage: run.sh NP}
# the build tree's tests/mpi: where make check runs us from
build=${MPI_TEST_DIR:-tests/mpi}
launcher=${MPIEXEC:-mpiexec}
if ! command -v "$launcher" >/dev/null 2>&1; then
    echo "run.sh: no MPI launcher ($launcher): skipped" >&2
    exit 77
fi
flags="-np $np"
# Open MPI refuses more ranks than cores unless told, and refuses root
# unless told (CI runs as root); MPICH's launcher needs neither.
if "$launcher" --version 2>&1 | grep -qE "Open MPI|OpenRTE|open-mpi"; then
    flags="--oversubscribe $flags"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Sanitizer builds (make check-hard sets ASAN_OPTIONS): leak detection
# stays on, scoped to our code by lsan.supp, which suppresses leaks whose
# allocation stack passes through Open MPI (see there); the slow unwinder
# gives the whole stacks the suppressions are matched against.
if [ -n "${ASAN_OPTIONS:-}" ]; then
    supp=$(cd "$(dirname "$0")" && pwd)/lsan.supp
    export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
    export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$supp:print_suppressions=0"
    export OMPI_MCA_mca_base_component_disable_dlclose=1
fi
# Two threads per rank would oversubscribe the cores np times over.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
run="${LIBTOOL:+$LIBTOOL --mode=execute}"
checks=0 failures=0 status=0
for prog in test_mpi_d test_mpi_s test_mpi_single; do
    [ -x "$build/$prog" ] || continue
    log=$(mktemp)
    # shellcheck disable=SC2086
    timeout -k 10 "${MPI_TEST_TIMEOUT:-300}" $run "$launcher" $flags \
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
