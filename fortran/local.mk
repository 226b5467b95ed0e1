# SPDX-License-Identifier: BSD-3-Clause
# fortran: module linattn in liblinattn_fortran (doc/fortran.md), and
# module linattn_mpi in liblinattn_mpi_fortran.
# The bind(C) interfaces, constants and structs are generated from
# linattn.h at build time by fortran/gen_fortran.pl (perl only), so they
# cannot drift from C; the wrappers are Fortran 2008 with iso_c_binding.
EXTRA_DIST += fortran/gen_fortran.pl fortran/linattn_prec.inc \
	fortran/linattn_grad_spec.inc fortran/linattn_grad.inc \
	fortran/linattn_grad_batched.inc fortran/linattn_ex.inc \
	fortran/unwrapped.txt \
	linattn-fortran.pc.in \
	fortran/linattn-fortran.cmake.in tests/fortran/consumer/CMakeLists.txt
dist_doc_DATA += doc/fortran.md
if BUILD_FORTRAN
lib_LTLIBRARIES += fortran/liblinattn_fortran.la
fortran_liblinattn_fortran_la_SOURCES = fortran/linattn_base.f90 \
	fortran/linattn_d.f90 fortran/linattn_s.f90 fortran/linattn.f90
nodist_fortran_liblinattn_fortran_la_SOURCES = fortran/linattn_c.f90
fortran_liblinattn_fortran_la_LIBADD = lib/liblinattn.la
# The interface version all the package's libraries share (configure.ac).
fortran_liblinattn_fortran_la_LDFLAGS = -version-info $(LINATTN_LT_VERSION) \
	-no-undefined
pkgconfig_DATA += linattn-fortran.pc
# Modules go to (and are found in) fortran/ of the build tree.
FMOD_FCFLAGS = $(FC_MODOUT)fortran $(FC_MODINC)fortran
AM_FCFLAGS = $(FMOD_FCFLAGS) $(WARN_FCFLAGS) $(NOCOPY_FCFLAGS)
GEN_FORTRAN = $(PERL) $(top_srcdir)/fortran/gen_fortran.pl \
	-I $(top_builddir)/include
FORTRAN_GEN_DEPS = $(top_srcdir)/include/linattn.h \
	include/linattn_version.h $(top_srcdir)/fortran/gen_fortran.pl
fortran/linattn_c.f90: $(FORTRAN_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) fortran && \
	$(GEN_FORTRAN) $(top_srcdir)/include/linattn.h > $@-t && mv $@-t $@
fortran/linattn_c_public.inc: $(FORTRAN_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) fortran && \
	$(GEN_FORTRAN) --public $(top_srcdir)/include/linattn.h > $@-t && mv $@-t $@
# A module must be compiled before the files that use it.
fortran/linattn_base.lo: fortran/linattn_c.lo
fortran/linattn_d.lo fortran/linattn_s.lo: fortran/linattn_c.lo \
	fortran/linattn_base.lo $(top_srcdir)/fortran/linattn_prec.inc \
	$(top_srcdir)/fortran/linattn_grad_spec.inc \
	$(top_srcdir)/fortran/linattn_grad.inc \
	$(top_srcdir)/fortran/linattn_grad_batched.inc \
	$(top_srcdir)/fortran/linattn_ex.inc
fortran/linattn.lo: fortran/linattn_d.lo fortran/linattn_s.lo \
	fortran/linattn_c_public.inc
# Every module is installed: module linattn refers to the others, and
# modules that extend it (linattn_mpi) use linattn_base.  The compiler's
# name and version are in fmoddir (configure --with-fortran-moddir).
FORTRAN_MODULES = linattn linattn_base linattn_c linattn_c_d linattn_c_s \
	linattn_c_any linattn_d linattn_s
nodist_fmod_DATA = $(FORTRAN_MODULES:%=fortran/%.$(FC_MODEXT))
$(nodist_fmod_DATA): fortran/linattn.lo
CLEANFILES += fortran/linattn_c.f90 fortran/linattn_c_public.inc \
	fortran/*.$(FC_MODEXT)
# linattn::fortran for CMake, beside linattnConfig.cmake, which includes it.
nodist_cmake_DATA += cmake/linattn-fortran.cmake
cmake/linattn-fortran.cmake: $(top_srcdir)/fortran/linattn-fortran.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(LINATTN_SUBST) -e 's|@fmoddir[@]|$(fmoddir)|g' \
	    -e 's|@FC[@]|$(FC)|g' -e 's|@FC_MODEXT[@]|$(FC_MODEXT)|g' \
	    $(top_srcdir)/fortran/linattn-fortran.cmake.in > $@

# ---- Fortran over MPI: module linattn_mpi in liblinattn_mpi_fortran
# (doc/mpi.md), on liblinattn_fortran and liblinattn_mpi.  Its bind(C)
# interfaces and the C shims that take the Fortran communicator handle
# are generated from linattn_mpi.h (gen_fortran.pl --comm MPI_Comm). ----
EXTRA_DIST += fortran/linattn_mpi_prec.inc linattn-mpi-fortran.pc.in \
	fortran/linattn-mpi-fortran.cmake.in
if HAVE_MPI_FORTRAN
lib_LTLIBRARIES += fortran/liblinattn_mpi_fortran.la
fortran_liblinattn_mpi_fortran_la_SOURCES = fortran/linattn_mpi_base.f90 \
	fortran/linattn_mpi_d.f90 fortran/linattn_mpi_s.f90 fortran/linattn_mpi.f90
nodist_fortran_liblinattn_mpi_fortran_la_SOURCES = fortran/linattn_mpi_c.f90 \
	fortran/linattn_mpi_shim.c
fortran_liblinattn_mpi_fortran_la_FCFLAGS = $(AM_FCFLAGS) $(MPI_FCFLAGS)
fortran_liblinattn_mpi_fortran_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
fortran_liblinattn_mpi_fortran_la_CFLAGS = $(AM_CFLAGS)
fortran_liblinattn_mpi_fortran_la_LIBADD = fortran/liblinattn_fortran.la \
	mpi/liblinattn_mpi.la lib/liblinattn.la $(MPI_FCLIBS) $(MPI_LIBS)
fortran_liblinattn_mpi_fortran_la_LDFLAGS = \
	-version-info $(LINATTN_LT_VERSION) -no-undefined
pkgconfig_DATA += linattn-mpi-fortran.pc
GEN_FORTRAN_MPI = $(GEN_FORTRAN) --api LINATTN_MPI_API --own --comm MPI_Comm
FORTRAN_MPI_GEN_DEPS = $(top_srcdir)/include/linattn_mpi.h \
	$(top_srcdir)/fortran/gen_fortran.pl
fortran/linattn_mpi_c.f90: $(FORTRAN_MPI_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) fortran && $(GEN_FORTRAN_MPI) --module linattn_mpi_c \
	    $(top_srcdir)/include/linattn_mpi.h > $@-t && mv $@-t $@
fortran/linattn_mpi_shim.c: $(FORTRAN_MPI_GEN_DEPS)
	$(AM_V_GEN)$(MKDIR_P) fortran && $(GEN_FORTRAN_MPI) --shim \
	    $(top_srcdir)/include/linattn_mpi.h > $@-t && mv $@-t $@
# A module before the files that use it (the objects through variables,
# so that automake keeps its own rules for them).
MPIF_LO = fortran/liblinattn_mpi_fortran_la-
MPIF_C_LO = $(MPIF_LO)linattn_mpi_c.lo
MPIF_BASE_LO = $(MPIF_LO)linattn_mpi_base.lo
MPIF_PREC_LO = $(MPIF_LO)linattn_mpi_d.lo $(MPIF_LO)linattn_mpi_s.lo
MPIF_TOP_LO = $(MPIF_LO)linattn_mpi.lo
$(MPIF_C_LO): fortran/linattn.lo
$(MPIF_BASE_LO): $(MPIF_C_LO)
$(MPIF_PREC_LO): $(MPIF_BASE_LO) $(top_srcdir)/fortran/linattn_mpi_prec.inc
$(MPIF_TOP_LO): $(MPIF_PREC_LO)
# installed beside module linattn's
FORTRAN_MPI_MODULES = linattn_mpi linattn_mpi_base linattn_mpi_c \
	linattn_mpi_c_d linattn_mpi_c_s linattn_mpi_c_any linattn_mpi_d \
	linattn_mpi_s
nodist_fmod_DATA += $(FORTRAN_MPI_MODULES:%=fortran/%.$(FC_MODEXT))
$(FORTRAN_MPI_MODULES:%=fortran/%.$(FC_MODEXT)): $(MPIF_TOP_LO)
CLEANFILES += fortran/linattn_mpi_c.f90 fortran/linattn_mpi_shim.c
nodist_cmake_DATA += cmake/linattn-mpi-fortran.cmake
cmake/linattn-mpi-fortran.cmake: $(top_srcdir)/fortran/linattn-mpi-fortran.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(LINATTN_SUBST) -e 's|@fmoddir[@]|$(fmoddir)|g' \
	    -e 's|@FC[@]|$(FC)|g' -e 's|@FC_MODEXT[@]|$(FC_MODEXT)|g' \
	    -e 's|@MPI_FCFLAGS[@]|$(MPI_FCFLAGS)|g' -e 's|@MPI_FCLIBS[@]|$(MPI_FCLIBS)|g' \
	    $(top_srcdir)/fortran/linattn-mpi-fortran.cmake.in > $@
CLEANFILES += cmake/linattn-mpi-fortran.cmake
# its tests (tests/mpi/test_f_mpi and test_f_mpi_init, with the MPI tests)
# use this module and linattn's: rebuilt when either changes
$(tests_mpi_test_f_mpi_OBJECTS) $(tests_mpi_test_f_mpi_init_OBJECTS): \
	$(MPIF_TOP_LO) fortran/linattn.lo
endif
endif

