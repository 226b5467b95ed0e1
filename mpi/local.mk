# SPDX-License-Identifier: BSD-3-Clause
# mpi: liblinattn_mpi, sequence-parallel attention across MPI ranks, on
# liblinattn's public API (doc/mpi.md).  Built when configure finds MPI;
# liblinattn itself never sees MPI.
MPI_GENERIC = mpi/frame.c mpi/attention.c mpi/causal.c mpi/packed.c \
	mpi/backward.c mpi/packed_backward.c \
	mpi/states.c mpi/checkpoint.c
MPI_H = mpi/mpi_internal.h mpi/mprec.h mpi/backward.h
MPI_CPP = $(AM_CPPFLAGS) -I$(top_srcdir)/mpi -I$(top_srcdir)/lib \
	$(MPI_CFLAGS) -DLINATTN_MPI_BUILDING
MPI_LIB_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS)
EXTRA_DIST += linattn-mpi.pc.in
if HAVE_MPI
lib_LTLIBRARIES += mpi/liblinattn_mpi.la
include_HEADERS += include/linattn_mpi.h
pkgconfig_DATA += linattn-mpi.pc
# its manual pages beside liblinattn's (tests/manpages.sh checks both)
MKMAN_INPUTS += $(top_srcdir)/include/linattn_mpi.h
noinst_LTLIBRARIES += mpi/libmpiprec_d.la mpi/libmpiprec_s.la
mpi_libmpiprec_d_la_SOURCES = $(MPI_GENERIC) $(MPI_H)
mpi_libmpiprec_d_la_CPPFLAGS = $(MPI_CPP)
mpi_libmpiprec_d_la_CFLAGS = $(MPI_LIB_CFLAGS)
mpi_libmpiprec_s_la_SOURCES = $(MPI_GENERIC) $(MPI_H)
mpi_libmpiprec_s_la_CPPFLAGS = $(MPI_CPP) -DLINATTN_SINGLE
mpi_libmpiprec_s_la_CFLAGS = $(MPI_LIB_CFLAGS)
mpi_liblinattn_mpi_la_SOURCES = mpi/agree.c mpi/reduce.c mpi/comm.c $(MPI_H)
mpi_liblinattn_mpi_la_CPPFLAGS = $(MPI_CPP)
mpi_liblinattn_mpi_la_CFLAGS = $(MPI_LIB_CFLAGS)
mpi_liblinattn_mpi_la_LIBADD = mpi/libmpiprec_d.la mpi/libmpiprec_s.la \
	lib/liblinattn.la $(MPI_LIBS) -lm
# the package's interface version (configure.ac: LINATTN_LT_VERSION)
mpi_liblinattn_mpi_la_LDFLAGS = -version-info $(LINATTN_LT_VERSION) -no-undefined
# its CMake target, linattn::mpi (cmake/linattnConfig.cmake includes it)
nodist_cmake_DATA += cmake/linattn-mpi.cmake
# and the manual page of its scaling study
nodist_man1_MANS += man/linattn-scaling-mpi.1
endif

