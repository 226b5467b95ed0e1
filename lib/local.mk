# SPDX-License-Identifier: BSD-3-Clause
# liblinattn, assembled from the folders' fragments (lib/*/local.mk,
# included before this one): the precision-generic sources
# (GENERIC_SOURCES) compiled once per precision (lib/common/prec.h), the
# kernels' builds (KERN_LIBS), the precision-independent libcommon.
include_HEADERS += include/linattn.h
# made by configure from include/linattn_version.h.in (the version lives
# in configure.ac only)
nodist_include_HEADERS = include/linattn_version.h
pkgconfig_DATA += linattn.pc
lib_LTLIBRARIES += lib/liblinattn.la
noinst_LTLIBRARIES += lib/libprec_d.la lib/libprec_s.la lib/libcommon.la
lib_libprec_d_la_SOURCES = $(GENERIC_SOURCES) $(INTERNAL_H)
lib_libprec_d_la_CPPFLAGS = $(INTERNAL_CPP)
lib_libprec_d_la_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS) $(OPENMP_CFLAGS)
lib_libprec_s_la_SOURCES = $(GENERIC_SOURCES) $(INTERNAL_H)
lib_libprec_s_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_SINGLE
lib_libprec_s_la_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS) $(OPENMP_CFLAGS)
lib_libcommon_la_CPPFLAGS = $(INTERNAL_CPP)
lib_libcommon_la_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS) $(EXACT_FP_FLAGS) \
	$(OPENMP_CFLAGS)
lib_liblinattn_la_CPPFLAGS = $(INTERNAL_CPP)
lib_liblinattn_la_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS) $(OPENMP_CFLAGS)
lib_liblinattn_la_LIBADD = lib/libprec_d.la lib/libprec_s.la lib/libcommon.la \
	$(KERN_LIBS) $(LAPACKE_LIBS) $(BLAS_LIBS)
# LINATTN_LT_VERSION: libtool's current:revision:age, set and explained in
# configure.ac.
lib_liblinattn_la_LDFLAGS = -version-info $(LINATTN_LT_VERSION) -no-undefined \
	$(OPENMP_CFLAGS)
