# SPDX-License-Identifier: BSD-3-Clause
# tests/hard: make check-hard (sanitizers, valgrind, fuzzing:
# tests/hard/run.sh) and make check-blas, the BLAS matrix.
EXTRA_DIST += tests/hard/run.sh tests/hard/fuzz_args.c
EXTRA_DIST += tests/hard/fuzz_checkpoint.c tests/crc32_ref.h
EXTRA_DIST += tests/hard/fuzz_finite.c tests/hard/fuzz_reader.h
# tracing every call against two builds (doc/internals.md)
EXTRA_DIST += tests/hard/trace_calls.c tests/hard/compare_builds.sh
check-hard: all
	top_srcdir=$(top_srcdir) FUZZ_SECONDS=$${FUZZ_SECONDS:-60} \
	    $(SHELL) $(top_srcdir)/tests/hard/run.sh
fuzz: all
	top_srcdir=$(top_srcdir) FUZZ_SECONDS=$${FUZZ_SECONDS:-3600} \
	    $(SHELL) $(top_srcdir)/tests/hard/run.sh
.PHONY: check-hard fuzz
# The BLAS matrix: build and test against every supported BLAS
# (tests/blas_matrix.sh; CI runs it).
EXTRA_DIST += tests/blas_matrix.sh
check-blas: all
	$(SHELL) $(top_srcdir)/tests/blas_matrix.sh
.PHONY: check-blas

