#!/bin/sh
# The MPI tests with 4 rank(s): tests/mpi/run.sh.
exec "$(dirname "$0")/run.sh" 4
