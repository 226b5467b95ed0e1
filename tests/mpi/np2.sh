#!/bin/sh
# The MPI tests with 2 rank(s): tests/mpi/run.sh.
exec "$(dirname "$0")/run.sh" 2
