# SPDX-License-Identifier: BSD-3-Clause
# Made by tests/gen_precision_mk.pl from tests/precision.list: edit
# the list, not this file.

# [suite]
if HAVE_CHECK
check_PROGRAMS += tests/test_math_d tests/test_math_s
tests_test_math_d_SOURCES = tests/test_math.c tests/testutil.h
tests_test_math_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_math_d_CFLAGS = $(TEST_CFLAGS)
tests_test_math_d_LDADD = $(TEST_LDADD)
tests_test_math_s_SOURCES = $(tests_test_math_d_SOURCES)
tests_test_math_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_math_s_CFLAGS = $(TEST_CFLAGS)
tests_test_math_s_LDADD = $(tests_test_math_d_LDADD)
check_PROGRAMS += tests/test_maps_d tests/test_maps_s
tests_test_maps_d_SOURCES = tests/test_maps.c tests/testutil.h tests/refmaps.h
tests_test_maps_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_maps_d_CFLAGS = $(TEST_CFLAGS)
tests_test_maps_d_LDADD = $(TEST_LDADD) $(LAPACKE_LIBS)
tests_test_maps_s_SOURCES = $(tests_test_maps_d_SOURCES)
tests_test_maps_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_maps_s_CFLAGS = $(TEST_CFLAGS)
tests_test_maps_s_LDADD = $(tests_test_maps_d_LDADD)
check_PROGRAMS += tests/test_errors_d tests/test_errors_s
tests_test_errors_d_SOURCES = tests/test_errors.c tests/testutil.h
tests_test_errors_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_errors_d_CFLAGS = $(TEST_CFLAGS)
tests_test_errors_d_LDADD = $(TEST_LDADD)
tests_test_errors_s_SOURCES = $(tests_test_errors_d_SOURCES)
tests_test_errors_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_errors_s_CFLAGS = $(TEST_CFLAGS)
tests_test_errors_s_LDADD = $(tests_test_errors_d_LDADD)
check_PROGRAMS += tests/test_batched_d tests/test_batched_s
tests_test_batched_d_SOURCES = tests/test_batched.c tests/testutil.h tests/tbat.h
tests_test_batched_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_batched_d_CFLAGS = $(TEST_CFLAGS)
tests_test_batched_d_LDADD = $(TEST_LDADD)
tests_test_batched_s_SOURCES = $(tests_test_batched_d_SOURCES)
tests_test_batched_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_batched_s_CFLAGS = $(TEST_CFLAGS)
tests_test_batched_s_LDADD = $(tests_test_batched_d_LDADD)
check_PROGRAMS += tests/test_approx_d tests/test_approx_s
tests_test_approx_d_SOURCES = tests/test_approx.c tests/testutil.h
tests_test_approx_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_approx_d_CFLAGS = $(TEST_CFLAGS)
tests_test_approx_d_LDADD = $(TEST_LDADD)
tests_test_approx_s_SOURCES = $(tests_test_approx_d_SOURCES)
tests_test_approx_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_approx_s_CFLAGS = $(TEST_CFLAGS)
tests_test_approx_s_LDADD = $(tests_test_approx_d_LDADD)
check_PROGRAMS += tests/test_grad_d tests/test_grad_s
tests_test_grad_d_SOURCES = tests/test_grad.c tests/testutil.h tests/refmaps.h tests/gradref.h
tests_test_grad_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_grad_d_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_d_LDADD = $(TEST_LDADD)
tests_test_grad_s_SOURCES = $(tests_test_grad_d_SOURCES)
tests_test_grad_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_grad_s_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_s_LDADD = $(tests_test_grad_d_LDADD)
check_PROGRAMS += tests/test_grad_batched_d tests/test_grad_batched_s
tests_test_grad_batched_d_SOURCES = tests/test_grad_batched.c tests/testutil.h tests/tbat.h tests/refmaps.h tests/gradref.h
tests_test_grad_batched_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_grad_batched_d_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_batched_d_LDADD = $(TEST_LDADD)
tests_test_grad_batched_s_SOURCES = $(tests_test_grad_batched_d_SOURCES)
tests_test_grad_batched_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_grad_batched_s_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_batched_s_LDADD = $(tests_test_grad_batched_d_LDADD)
check_PROGRAMS += tests/test_grad_errors_d tests/test_grad_errors_s
tests_test_grad_errors_d_SOURCES = tests/test_grad_errors.c tests/testutil.h
tests_test_grad_errors_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_grad_errors_d_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_errors_d_LDADD = $(TEST_LDADD)
tests_test_grad_errors_s_SOURCES = $(tests_test_grad_errors_d_SOURCES)
tests_test_grad_errors_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_grad_errors_s_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_errors_s_LDADD = $(tests_test_grad_errors_d_LDADD)
check_PROGRAMS += tests/test_grad_finite_d tests/test_grad_finite_s
tests_test_grad_finite_d_SOURCES = tests/test_grad_finite.c tests/testutil.h tests/finite_draw.h
tests_test_grad_finite_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_grad_finite_d_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_finite_d_LDADD = $(TEST_LDADD)
tests_test_grad_finite_s_SOURCES = $(tests_test_grad_finite_d_SOURCES)
tests_test_grad_finite_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_grad_finite_s_CFLAGS = $(TEST_CFLAGS)
tests_test_grad_finite_s_LDADD = $(tests_test_grad_finite_d_LDADD)
check_PROGRAMS += tests/test_checkpoint_d tests/test_checkpoint_s
tests_test_checkpoint_d_SOURCES = tests/test_checkpoint.c tests/testutil.h tests/crc32_ref.h tests/fileutil.h
tests_test_checkpoint_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_checkpoint_d_CFLAGS = $(TEST_CFLAGS)
tests_test_checkpoint_d_LDADD = $(TEST_LDADD)
tests_test_checkpoint_s_SOURCES = $(tests_test_checkpoint_d_SOURCES)
tests_test_checkpoint_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_checkpoint_s_CFLAGS = $(TEST_CFLAGS)
tests_test_checkpoint_s_LDADD = $(tests_test_checkpoint_d_LDADD)
check_PROGRAMS += tests/test_finite_d tests/test_finite_s
tests_test_finite_d_SOURCES = tests/test_finite.c tests/testutil.h tests/finite_check.h tests/finite_draw.h
tests_test_finite_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_finite_d_CFLAGS = $(TEST_CFLAGS)
tests_test_finite_d_LDADD = $(TEST_LDADD)
tests_test_finite_s_SOURCES = $(tests_test_finite_d_SOURCES)
tests_test_finite_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_finite_s_CFLAGS = $(TEST_CFLAGS)
tests_test_finite_s_LDADD = $(tests_test_finite_d_LDADD)
check_PROGRAMS += tests/test_limits_d tests/test_limits_s
tests_test_limits_d_SOURCES = tests/test_limits.c tests/testutil.h tests/crc32_ref.h
tests_test_limits_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_limits_d_CFLAGS = $(TEST_CFLAGS)
tests_test_limits_d_LDADD = $(TEST_LDADD)
tests_test_limits_s_SOURCES = $(tests_test_limits_d_SOURCES)
tests_test_limits_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_limits_s_CFLAGS = $(TEST_CFLAGS)
tests_test_limits_s_LDADD = $(tests_test_limits_d_LDADD)
check_PROGRAMS += tests/test_files_d tests/test_files_s
tests_test_files_d_SOURCES = tests/test_files.c tests/testutil.h tests/fileutil.h
tests_test_files_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_files_d_CFLAGS = $(TEST_CFLAGS)
tests_test_files_d_LDADD = $(TEST_LDADD)
tests_test_files_s_SOURCES = $(tests_test_files_d_SOURCES)
tests_test_files_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_files_s_CFLAGS = $(TEST_CFLAGS)
tests_test_files_s_LDADD = $(tests_test_files_d_LDADD)
check_PROGRAMS += tests/test_count_d tests/test_count_s
tests_test_count_d_SOURCES = tests/test_count.c tests/testutil.h
tests_test_count_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_count_d_CFLAGS = $(TEST_CFLAGS)
tests_test_count_d_LDADD = $(TEST_LDADD)
tests_test_count_s_SOURCES = $(tests_test_count_d_SOURCES)
tests_test_count_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_count_s_CFLAGS = $(TEST_CFLAGS)
tests_test_count_s_LDADD = $(tests_test_count_d_LDADD)
check_PROGRAMS += tests/test_distrib_d tests/test_distrib_s
tests_test_distrib_d_SOURCES = tests/test_distrib.c tests/testutil.h
tests_test_distrib_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_distrib_d_CFLAGS = $(TEST_CFLAGS)
tests_test_distrib_d_LDADD = $(TEST_LDADD)
tests_test_distrib_s_SOURCES = $(tests_test_distrib_d_SOURCES)
tests_test_distrib_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_distrib_s_CFLAGS = $(TEST_CFLAGS)
tests_test_distrib_s_LDADD = $(tests_test_distrib_d_LDADD)
check_PROGRAMS += tests/test_extras_d tests/test_extras_s
tests_test_extras_d_SOURCES = tests/test_extras.c tests/testutil.h
tests_test_extras_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_extras_d_CFLAGS = $(TEST_CFLAGS)
tests_test_extras_d_LDADD = $(TEST_LDADD)
tests_test_extras_s_SOURCES = $(tests_test_extras_d_SOURCES)
tests_test_extras_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_extras_s_CFLAGS = $(TEST_CFLAGS)
tests_test_extras_s_LDADD = $(tests_test_extras_d_LDADD)
check_PROGRAMS += tests/test_weights_d tests/test_weights_s
tests_test_weights_d_SOURCES = tests/test_weights.c tests/testutil.h
tests_test_weights_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_weights_d_CFLAGS = $(TEST_CFLAGS)
tests_test_weights_d_LDADD = $(TEST_LDADD)
tests_test_weights_s_SOURCES = $(tests_test_weights_d_SOURCES)
tests_test_weights_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_weights_s_CFLAGS = $(TEST_CFLAGS)
tests_test_weights_s_LDADD = $(tests_test_weights_d_LDADD)
check_PROGRAMS += tests/test_packed_d tests/test_packed_s
tests_test_packed_d_SOURCES = tests/test_packed.c tests/testutil.h
tests_test_packed_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_packed_d_CFLAGS = $(TEST_CFLAGS)
tests_test_packed_d_LDADD = $(TEST_LDADD)
tests_test_packed_s_SOURCES = $(tests_test_packed_d_SOURCES)
tests_test_packed_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_packed_s_CFLAGS = $(TEST_CFLAGS)
tests_test_packed_s_LDADD = $(tests_test_packed_d_LDADD)
check_PROGRAMS += tests/test_step_d tests/test_step_s
tests_test_step_d_SOURCES = tests/test_step.c tests/testutil.h
tests_test_step_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_step_d_CFLAGS = $(TEST_CFLAGS)
tests_test_step_d_LDADD = $(TEST_LDADD)
tests_test_step_s_SOURCES = $(tests_test_step_d_SOURCES)
tests_test_step_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_step_s_CFLAGS = $(TEST_CFLAGS)
tests_test_step_s_LDADD = $(tests_test_step_d_LDADD)
check_PROGRAMS += tests/test_weighted_grad_d tests/test_weighted_grad_s
tests_test_weighted_grad_d_SOURCES = tests/test_weighted_grad.c tests/testutil.h
tests_test_weighted_grad_d_CPPFLAGS = $(AM_CPPFLAGS)
tests_test_weighted_grad_d_CFLAGS = $(TEST_CFLAGS)
tests_test_weighted_grad_d_LDADD = $(TEST_LDADD)
tests_test_weighted_grad_s_SOURCES = $(tests_test_weighted_grad_d_SOURCES)
tests_test_weighted_grad_s_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_SINGLE
tests_test_weighted_grad_s_CFLAGS = $(TEST_CFLAGS)
tests_test_weighted_grad_s_LDADD = $(tests_test_weighted_grad_d_LDADD)
endif

# [fortran]
FORTRAN_PRECISION_LOGS =
EXTRA_DIST += tests/fortran/test_f_math.inc tests/fortran/test_f_errors.inc tests/fortran/test_f_gbatch.inc
if BUILD_FORTRAN
if HAVE_CHECK
check_PROGRAMS += tests/fortran/test_f_math_d tests/fortran/test_f_math_s
tests_fortran_test_f_math_d_SOURCES = tests/fortran/test_f_math_d.f90
tests_fortran_test_f_math_d_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_math_d_LDADD = $(FTEST_LDADD)
tests_fortran_test_f_math_s_SOURCES = tests/fortran/test_f_math_s.f90
tests_fortran_test_f_math_s_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_math_s_LDADD = $(tests_fortran_test_f_math_d_LDADD)
$(tests_fortran_test_f_math_d_OBJECTS) $(tests_fortran_test_f_math_s_OBJECTS): fortran/linattn.lo \
	tests/fortran/libftest.la $(top_srcdir)/tests/fortran/test_f_math.inc
FORTRAN_PRECISION_LOGS += tests/fortran/test_f_math_d.log tests/fortran/test_f_math_s.log
check_PROGRAMS += tests/fortran/test_f_errors_d tests/fortran/test_f_errors_s
tests_fortran_test_f_errors_d_SOURCES = tests/fortran/test_f_errors_d.f90
tests_fortran_test_f_errors_d_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_errors_d_LDADD = $(FTEST_LDADD)
tests_fortran_test_f_errors_s_SOURCES = tests/fortran/test_f_errors_s.f90
tests_fortran_test_f_errors_s_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_errors_s_LDADD = $(tests_fortran_test_f_errors_d_LDADD)
$(tests_fortran_test_f_errors_d_OBJECTS) $(tests_fortran_test_f_errors_s_OBJECTS): fortran/linattn.lo \
	tests/fortran/libftest.la $(top_srcdir)/tests/fortran/test_f_errors.inc
FORTRAN_PRECISION_LOGS += tests/fortran/test_f_errors_d.log tests/fortran/test_f_errors_s.log
check_PROGRAMS += tests/fortran/test_f_gbatch_d tests/fortran/test_f_gbatch_s
tests_fortran_test_f_gbatch_d_SOURCES = tests/fortran/test_f_gbatch_d.f90
tests_fortran_test_f_gbatch_d_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_gbatch_d_LDADD = $(FTEST_LDADD)
tests_fortran_test_f_gbatch_s_SOURCES = tests/fortran/test_f_gbatch_s.f90
tests_fortran_test_f_gbatch_s_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_gbatch_s_LDADD = $(tests_fortran_test_f_gbatch_d_LDADD)
$(tests_fortran_test_f_gbatch_d_OBJECTS) $(tests_fortran_test_f_gbatch_s_OBJECTS): fortran/linattn.lo \
	tests/fortran/libftest.la $(top_srcdir)/tests/fortran/test_f_gbatch.inc
FORTRAN_PRECISION_LOGS += tests/fortran/test_f_gbatch_d.log tests/fortran/test_f_gbatch_s.log
endif
endif

# [mpi]
if HAVE_CHECK
if HAVE_MPI
MPI_CHECK_PROGS += tests/mpi/test_mpi_d$(EXEEXT) tests/mpi/test_mpi_s$(EXEEXT)
tests_mpi_test_mpi_d_SOURCES = tests/mpi/test_mpi.c $(MPI_TEST_H) tests/mpi/pmpi.h
tests_mpi_test_mpi_d_CPPFLAGS = $(MPI_TEST_CPP)
tests_mpi_test_mpi_d_CFLAGS = $(TEST_CFLAGS)
tests_mpi_test_mpi_d_LDADD = $(MPI_TEST_LDADD) -lpthread
tests_mpi_test_mpi_s_SOURCES = $(tests_mpi_test_mpi_d_SOURCES)
tests_mpi_test_mpi_s_CPPFLAGS = $(MPI_TEST_CPP) -DTEST_SINGLE
tests_mpi_test_mpi_s_CFLAGS = $(TEST_CFLAGS)
tests_mpi_test_mpi_s_LDADD = $(tests_mpi_test_mpi_d_LDADD)
MPI_CHECK_PROGS += tests/mpi/test_mpi_finite_d$(EXEEXT) tests/mpi/test_mpi_finite_s$(EXEEXT)
tests_mpi_test_mpi_finite_d_SOURCES = tests/mpi/test_mpi_finite.c $(MPI_TEST_H)
tests_mpi_test_mpi_finite_d_CPPFLAGS = $(MPI_TEST_CPP)
tests_mpi_test_mpi_finite_d_CFLAGS = $(TEST_CFLAGS)
tests_mpi_test_mpi_finite_d_LDADD = $(MPI_TEST_LDADD)
tests_mpi_test_mpi_finite_s_SOURCES = $(tests_mpi_test_mpi_finite_d_SOURCES)
tests_mpi_test_mpi_finite_s_CPPFLAGS = $(MPI_TEST_CPP) -DTEST_SINGLE
tests_mpi_test_mpi_finite_s_CFLAGS = $(TEST_CFLAGS)
tests_mpi_test_mpi_finite_s_LDADD = $(tests_mpi_test_mpi_finite_d_LDADD)
endif
endif
