#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tests/mpi/launch.sh NP PROGRAM [ARGS...] -- runs PROGRAM on NP ranks of
# this machine with $MPIEXEC (default mpiexec), adding what Open MPI needs
# here: --oversubscribe (more ranks than cores) and, as root (CI), its two
# variables that allow root.  MPICH's launcher needs neither.  Used by the
# MPI tests (run.sh) and make scaling-mpi; on a cluster use your
# launcher (srun, mpirun) directly.
np=${1:?usage: launch.sh NP PROGRAM [ARGS...]}
shift
launcher=${MPIEXEC:-mpiexec}
if ! command -v "$launcher" >/dev/null 2>&1; then
    echo "launch.sh: no MPI launcher ($launcher)" >&2
    exit 127
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
if "$launcher" --version 2>&1 | grep -qE "Open MPI|OpenRTE|open-mpi"; then
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    exec "$launcher" --oversubscribe -np "$np" "$@"
fi
exec "$launcher" -np "$np" "$@"
