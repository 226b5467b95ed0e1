# SPDX-License-Identifier: BSD-3-Clause
# lib/kernels: the library's own kernels (kernels/kern.h, kern_grad.h),
# compiled once per precision and per code path -- generic, AVX2 + FMA
# (x86-64-v3), AVX-512 (x86-64-v4) -- and the dispatch that picks the
# tables of the path in force (dispatch.c, in the generic build).
# tests/test_kernels links every build.
KERN_SOURCES = lib/kernels/kern.c lib/kernels/kern.h \
	lib/kernels/kern_grad.c lib/kernels/kern_grad.h \
	lib/kernels/exp_avx2.h lib/kernels/exp_avx512.h lib/kernels/exp2_table.h \
	lib/kernels/mm_avx512.h lib/kernels/step_avx512.h lib/kernels/vexp.h \
	lib/common/prec.h lib/common/simd.h lib/common/cpu.h
INTERNAL_H += lib/kernels/kern.h lib/kernels/kern_grad.h lib/kernels/vexp.h
KERN_CFLAGS = $(AM_CFLAGS) $(CODEGEN_FLAGS)
noinst_LTLIBRARIES += lib/libkern_d0.la lib/libkern_s0.la
lib_libkern_d0_la_SOURCES = $(KERN_SOURCES) lib/kernels/dispatch.c
lib_libkern_d0_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=0
lib_libkern_d0_la_CFLAGS = $(KERN_CFLAGS)
lib_libkern_s0_la_SOURCES = $(KERN_SOURCES) lib/kernels/dispatch.c
lib_libkern_s0_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=0 -DLINATTN_SINGLE
lib_libkern_s0_la_CFLAGS = $(KERN_CFLAGS)
KERN_LIBS = lib/libkern_d0.la lib/libkern_s0.la
if HAVE_X86_KERNELS
noinst_LTLIBRARIES += lib/libkern_d1.la lib/libkern_s1.la lib/libkern_d2.la \
	lib/libkern_s2.la
lib_libkern_d1_la_SOURCES = $(KERN_SOURCES)
lib_libkern_d1_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=1
lib_libkern_d1_la_CFLAGS = $(KERN_CFLAGS) -march=x86-64-v3
lib_libkern_s1_la_SOURCES = $(KERN_SOURCES)
lib_libkern_s1_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=1 -DLINATTN_SINGLE
lib_libkern_s1_la_CFLAGS = $(KERN_CFLAGS) -march=x86-64-v3
lib_libkern_d2_la_SOURCES = $(KERN_SOURCES)
lib_libkern_d2_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=2
lib_libkern_d2_la_CFLAGS = $(KERN_CFLAGS) -march=x86-64-v4
lib_libkern_s2_la_SOURCES = $(KERN_SOURCES)
lib_libkern_s2_la_CPPFLAGS = $(INTERNAL_CPP) -DLINATTN_KERN_LEVEL=2 -DLINATTN_SINGLE
lib_libkern_s2_la_CFLAGS = $(KERN_CFLAGS) -march=x86-64-v4
KERN_LIBS += lib/libkern_d1.la lib/libkern_s1.la lib/libkern_d2.la \
	lib/libkern_s2.la
endif
