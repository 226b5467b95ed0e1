# SPDX-License-Identifier: BSD-3-Clause
# lib/common: what every part of the library shares.  The precision
# switch and the BLAS door (headers of the precision-generic builds), and
# libcommon's precision-independent services: argument checks (single
# matrices and strided batches), threads, the CPU probe, the BLAS found at
# run time (linattn_platform_query), and the status sentences.
INTERNAL_H += lib/common/prec.h lib/common/view.h lib/common/blas.h \
	lib/common/simd.h \
	lib/common/validate.h lib/common/threads.h lib/common/cpu.h
lib_libcommon_la_SOURCES += lib/common/validate.c lib/common/validate.h \
	lib/common/strides.c lib/common/threads.c lib/common/threads.h \
	lib/common/cpu.c lib/common/cpu.h lib/common/platform.c \
	lib/common/platform.h
lib_liblinattn_la_SOURCES += lib/common/errors.c
