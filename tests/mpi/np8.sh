#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The MPI tests with 8 rank(s): tests/mpi/run.sh.
exec "$(dirname "$0")/run.sh" 8
