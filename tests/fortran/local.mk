# SPDX-License-Identifier: BSD-3-Clause
# tests/fortran: the Fortran tests (doc/fortran.md, doc/testing.md).
if BUILD_FORTRAN
# The tests' helper module (checks, comparisons) and the generated
# constants-and-layout check (both halves from linattn.h).
noinst_LTLIBRARIES += tests/fortran/libftest.la
tests_fortran_libftest_la_SOURCES = tests/fortran/ftest.f90
nodist_tests_fortran_libftest_la_SOURCES = tests/fortran/check_f.f90 \
	tests/fortran/check_c.c
tests/fortran/check_f.f90: $(FORTRAN_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) tests/fortran && \
	$(GEN_FORTRAN) --check-f $(top_srcdir)/include/linattn.h > $@-t && mv $@-t $@
tests/fortran/check_c.c: $(FORTRAN_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) tests/fortran && \
	$(GEN_FORTRAN) --check-c $(top_srcdir)/include/linattn.h > $@-t && mv $@-t $@
tests_fortran_libftest_la_FCFLAGS = $(FTEST_FCFLAGS)
$(tests_fortran_libftest_la_OBJECTS): fortran/linattn.lo
CLEANFILES += tests/fortran/check_f.f90 tests/fortran/check_c.c

# Bounds checked; bit-for-bit comparisons of reals are on purpose.
FTEST_FCFLAGS = $(FMOD_FCFLAGS) $(WARN_FCFLAGS) $(FCHECK_FCFLAGS) \
	$(TEST_FCFLAGS_EXTRA)
FTEST_LDADD = tests/fortran/libftest.la fortran/liblinattn_fortran.la \
	lib/liblinattn.la
# Tests (make check runs every check program; without Check, make check
# stops first); the programs that the scripts below run with arguments or
# watch are built by make.
if HAVE_CHECK
# (the suites of both precisions: tests/precision.list)
check_PROGRAMS += tests/fortran/test_f_api tests/fortran/test_f_grad
noinst_PROGRAMS += tests/fortran/test_f_nocopy tests/fortran/stop_f \
	tests/fortran/ckpt_f tests/fortran/ckpt_c
tests_fortran_test_f_grad_SOURCES = tests/fortran/test_f_grad.f90
tests_fortran_test_f_grad_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_grad_LDADD = $(FTEST_LDADD)
tests_fortran_test_f_api_SOURCES = tests/fortran/test_f_api.f90
tests_fortran_test_f_api_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_test_f_api_LDADD = $(FTEST_LDADD)
# No array temporary at compile time or at run time (nocopy.sh).
tests_fortran_test_f_nocopy_SOURCES = tests/fortran/test_f_nocopy.f90
tests_fortran_test_f_nocopy_FCFLAGS = $(FTEST_FCFLAGS) $(NOCOPY_FCFLAGS) \
	$(FCHECK_TEMPS_FCFLAGS)
tests_fortran_test_f_nocopy_LDADD = $(FTEST_LDADD)
tests_fortran_stop_f_SOURCES = tests/fortran/stop_f.f90
tests_fortran_stop_f_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_stop_f_LDADD = fortran/liblinattn_fortran.la
tests_fortran_ckpt_f_SOURCES = tests/fortran/ckpt_f.f90
tests_fortran_ckpt_f_FCFLAGS = $(FTEST_FCFLAGS)
tests_fortran_ckpt_f_LDADD = $(FTEST_LDADD)
tests_fortran_ckpt_c_SOURCES = tests/fortran/ckpt_c.c
tests_fortran_ckpt_c_LDADD = lib/liblinattn.la
FORTRAN_TEST_OBJS = $(tests_fortran_test_f_api_OBJECTS) \
	$(tests_fortran_test_f_nocopy_OBJECTS) \
	$(tests_fortran_stop_f_OBJECTS) $(tests_fortran_ckpt_f_OBJECTS) \
	$(tests_fortran_test_f_grad_OBJECTS)
# They use the module, the test helpers, and their precision-generic
# bodies.
$(FORTRAN_TEST_OBJS): fortran/linattn.lo tests/fortran/libftest.la
$(tests_fortran_ckpt_f_OBJECTS): $(top_srcdir)/tests/fortran/ckpt_f.inc
FTEST_SH = tests/fortran/nocopy.sh tests/fortran/stop.sh \
	tests/fortran/checkpoint_interop.sh tests/fortran/coverage.sh \
	tests/fortran/textbook.sh tests/fortran/timestep_restart.sh \
	tests/fortran/installed.sh examples/fortran/galerkin \
	examples/fortran/galerkin_meshes examples/fortran/train_map
TESTS += $(FTEST_SH)
# make install relinks liblinattn_fortran (and liblinattn_mpi_fortran) in
# the build tree, and while it does the library file is half-written:
# installed.sh runs after every other test of the run has finished, so
# that no test loads those libraries (or reads their symbols) and no test
# program links against them meanwhile (the MPI programs are built for
# their np*.sh tests, during the run).  TEST_LOGS is automake's list of
# the run's logs; the substitution takes installed.sh's own out.  (The
# target is a variable so that automake still writes the rule that runs
# the test.)
INSTALLED_SH_LOG = tests/fortran/installed.sh.log
$(INSTALLED_SH_LOG): $(TEST_LOGS:tests/fortran/installed.sh.log=)
endif
endif
EXTRA_DIST += tests/fortran/ckpt_f.inc tests/fortran/nocopy.sh tests/fortran/stop.sh \
	tests/fortran/checkpoint_interop.sh tests/fortran/coverage.sh \
	tests/fortran/textbook.sh tests/fortran/timestep_restart.sh \
	tests/fortran/installed.sh
# What the Fortran test scripts need to know about the build.
FTEST_ENVIRONMENT = top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	FC='$(FC)'; PERL='$(PERL)'; PKG_CONFIG='$(PKG_CONFIG)'; MAKE='$(MAKE)'; \
	libdir='$(libdir)'; includedir='$(includedir)'; fmoddir='$(fmoddir)'; \
	fexamplesdir='$(fexamplesdir)'; FCFLAGS='$(FCFLAGS)'; LDFLAGS='$(LDFLAGS)'; \
	export top_srcdir top_builddir FC PERL PKG_CONFIG MAKE libdir includedir \
	fmoddir fexamplesdir FCFLAGS LDFLAGS;
if HAVE_CHECK
AM_TESTS_ENVIRONMENT += $(FTEST_ENVIRONMENT)
endif

# make installcheck (and so distcheck): the README's Fortran example built
# against the installed prefix with pkg-config (installcheck-local runs it).
if BUILD_FORTRAN
INSTALLCHECK_FORTRAN = $(FTEST_ENVIRONMENT) INSTALLED=1 \
	$(SHELL) $(top_srcdir)/tests/fortran/installed.sh
else
INSTALLCHECK_FORTRAN = :
endif
