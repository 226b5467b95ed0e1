#!/bin/sh
# The MPI tests with 3 rank(s): tests/mpi/run.sh.
exec "$(dirname "$0")/run.sh" 3
