# SPDX-License-Identifier: BSD-3-Clause
# tests: the Check suites and the test scripts (doc/testing.md).  The
# suites built for both precisions are one line each in
# tests/precision.list (tests/precision.mk is made from it); the others
# are here.
EXTRA_DIST += tests/precision.list tests/gen_precision_mk.pl
if HAVE_CHECK
TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(OPENMP_CFLAGS)
TEST_LDADD = lib/liblinattn.la $(CHECK_LIBS) $(BLAS_LIBS)
check_PROGRAMS += tests/test_api
TESTS += $(check_PROGRAMS) tests/worked_example.sh tests/spdx.sh \
	tests/manpages.sh tests/readme_snippets.sh tests/isa_paths.sh \
	tests/train_map.sh tests/precision_mk.sh tests/symbols.sh
# the compiler and flags of this build, for the tests that compile
# programs (readme_snippets.sh: under check-hard's sanitizers too)
AM_TESTS_ENVIRONMENT = CC='$(CC)' CFLAGS='$(CFLAGS)' LDFLAGS='$(LDFLAGS)'; \
	PERL='$(PERL)'; NM='$(NM)'; export CC CFLAGS LDFLAGS PERL NM;
# the pages the manpages test inspects
check_DATA = man/man3/.stamp $(nodist_man1_MANS)
tests_test_api_SOURCES = tests/test_api.c tests/testutil.h
tests_test_api_CFLAGS = $(TEST_CFLAGS)
tests_test_api_LDADD = $(TEST_LDADD)
# The exponential kernels, against libm over the whole range; linked with
# the internal convenience libraries to reach every code path's build.
KERNEL_TEST_CPP = $(AM_CPPFLAGS) -I$(top_srcdir)/lib
check_PROGRAMS += tests/test_kernels_d tests/test_kernels_s
tests_test_kernels_d_SOURCES = tests/test_kernels.c tests/testutil.h
tests_test_kernels_d_CPPFLAGS = $(KERNEL_TEST_CPP)
tests_test_kernels_d_CFLAGS = $(TEST_CFLAGS) $(CODEGEN_FLAGS)
tests_test_kernels_d_LDADD = $(KERN_LIBS) lib/libcommon.la $(CHECK_LIBS) -lm
tests_test_kernels_s_SOURCES = $(tests_test_kernels_d_SOURCES)
tests_test_kernels_s_CPPFLAGS = $(KERNEL_TEST_CPP) -DTEST_SINGLE -DLINATTN_SINGLE
tests_test_kernels_s_CFLAGS = $(TEST_CFLAGS) $(CODEGEN_FLAGS)
tests_test_kernels_s_LDADD = $(tests_test_kernels_d_LDADD)
# linattn_platform_query against OpenBLAS's own queries, the compiler's CPU
# detection and child processes with OPENBLAS_CORETYPE / LINATTN_ISA set.
check_PROGRAMS += tests/test_platform
tests_test_platform_SOURCES = tests/test_platform.c tests/testutil.h
tests_test_platform_CPPFLAGS = $(KERNEL_TEST_CPP)
tests_test_platform_CFLAGS = $(TEST_CFLAGS)
tests_test_platform_LDADD = lib/libcommon.la $(CHECK_LIBS) $(BLAS_LIBS) -lm
EXTRA_DIST += tests/worked_example.sh tests/spdx.sh tests/manpages.sh \
	tests/readme_snippets.sh tests/isa_paths.sh tests/train_map.sh \
	tests/precision_mk.sh tests/symbols.sh tests/symbols/liblinattn.txt \
	tests/symbols/liblinattn_mpi.txt tests/symbols/liblinattn_fortran.txt \
	tests/symbols/liblinattn_mpi_fortran.txt
CLEANFILES += tests/isa_paths_*.out
else
check-local:
	@echo "make check needs the Check library: apt-get install check (Debian/Ubuntu), then re-run ./configure" >&2
	@exit 1
endif
# The headers the suites share (tests/precision.list names which use which).
EXTRA_DIST += tests/testutil.h tests/refmaps.h tests/gradref.h tests/tbat.h \
	tests/finite_check.h tests/finite_draw.h tests/crc32_ref.h \
	tests/fileutil.h

# make installcheck (run by make distcheck): programs built outside the
# tree against the installed prefix, with pkg-config, CMake and the
# environment modules (tests/consumers.sh), and the Fortran example.
installcheck-local:
	prefix=$(prefix) docdir=$(docdir) top_srcdir=$(top_srcdir) CC="$(CC)" \
	    FC="$(FC)" $(SHELL) $(top_srcdir)/tests/consumers.sh
	$(INSTALLCHECK_FORTRAN)
EXTRA_DIST += tests/consumers.sh tests/consumer/app.c \
	tests/consumer/CMakeLists.txt tests/consumer/app_mpi.c \
	tests/consumer/mpi/CMakeLists.txt tests/consumer/app_mpi.f90 \
	tests/consumer/mpi_fortran/CMakeLists.txt

# After a change to tests/precision.list: make precision-mk.
precision-mk:
	$(PERL) $(srcdir)/tests/gen_precision_mk.pl $(srcdir)/tests/precision.list \
	    > $(srcdir)/tests/precision.mk
.PHONY: precision-mk
