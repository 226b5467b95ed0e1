# SPDX-License-Identifier: BSD-3-Clause
# tests/mpi: liblinattn_mpi under mpirun at 1 to 8 ranks (tests/mpi/run.sh:
# timeouts, Open MPI's flags for oversubscription and root); 5 to 8 for
# the scan's steps at non-powers of two and a full 3-step doubling.  The
# programs of both precisions are in tests/precision.list.
MPI_NP_TESTS = tests/mpi/np1.sh tests/mpi/np2.sh tests/mpi/np3.sh \
	tests/mpi/np4.sh tests/mpi/np5.sh tests/mpi/np6.sh tests/mpi/np7.sh \
	tests/mpi/np8.sh
EXTRA_DIST += tests/mpi/run.sh $(MPI_NP_TESTS) tests/mpi/lsan.supp \
	tests/mpi/launch.sh tests/mpi/example.sh tests/mpi/train.sh \
	tests/mpi/mpitest.h \
	tests/mpi/mpidata.h tests/mpi/mpipacked.h tests/mpi/mpigrad.h \
	tests/mpi/pmpi.h
if HAVE_CHECK
if HAVE_MPI
MPI_TEST_LDADD = mpi/liblinattn_mpi.la $(TEST_LDADD) $(MPI_LIBS)
MPI_TEST_CPP = $(AM_CPPFLAGS) -I$(top_srcdir)/tests $(MPI_CFLAGS)
MPI_TEST_H = tests/mpi/mpitest.h tests/mpi/mpidata.h tests/mpi/mpipacked.h \
	tests/mpi/mpigrad.h \
	tests/testutil.h
# Programs that run only under mpirun (not as tests of their own): built
# for the np*.sh tests, which depend on them.
MPI_CHECK_PROGS = tests/mpi/test_mpi_single$(EXEEXT)
tests_mpi_test_mpi_single_SOURCES = tests/mpi/test_mpi_single.c \
	$(MPI_TEST_H)
tests_mpi_test_mpi_single_CPPFLAGS = $(MPI_TEST_CPP)
# a second thread of its own (the refusal off MPI's main thread)
tests_mpi_test_mpi_single_CFLAGS = $(AM_CFLAGS) -pthread
tests_mpi_test_mpi_single_LDADD = $(MPI_TEST_LDADD) -lpthread
if HAVE_MPI_FORTRAN
# module linattn_mpi from Fortran
MPI_CHECK_PROGS += tests/mpi/test_f_mpi$(EXEEXT)
tests_mpi_test_f_mpi_SOURCES = tests/mpi/test_f_mpi.f90 tests/mpi/fmpitest.inc
tests_mpi_test_f_mpi_FCFLAGS = $(FTEST_FCFLAGS) $(MPI_FCFLAGS) \
	-I$(top_srcdir)/tests/mpi
tests_mpi_test_f_mpi_LDADD = fortran/liblinattn_mpi_fortran.la \
	fortran/liblinattn_fortran.la $(MPI_FCLIBS)
# and in a program that starts MPI with plain MPI_Init
MPI_CHECK_PROGS += tests/mpi/test_f_mpi_init$(EXEEXT)
tests_mpi_test_f_mpi_init_SOURCES = tests/mpi/test_f_mpi_init.f90 \
	tests/mpi/fmpitest.inc
tests_mpi_test_f_mpi_init_FCFLAGS = $(FTEST_FCFLAGS) $(MPI_FCFLAGS) \
	-I$(top_srcdir)/tests/mpi
tests_mpi_test_f_mpi_init_LDADD = fortran/liblinattn_mpi_fortran.la \
	fortran/liblinattn_fortran.la $(MPI_FCLIBS)
endif
EXTRA_PROGRAMS = $(MPI_CHECK_PROGS)
CLEANFILES += $(MPI_CHECK_PROGS)
TESTS += $(MPI_NP_TESTS)
$(MPI_NP_TESTS:.sh=.sh.log): $(MPI_CHECK_PROGS)
TESTS += tests/mpi/example.sh tests/mpi/train.sh
AM_TESTS_ENVIRONMENT += MPIEXEC='$(MPIEXEC)'; LIBTOOL='$(abs_top_builddir)/libtool'; \
	LINATTN_EXTRA_LIBS=mpi/.libs/liblinattn_mpi.so; \
	export MPIEXEC LIBTOOL LINATTN_EXTRA_LIBS;
endif
endif
