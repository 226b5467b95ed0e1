# SPDX-License-Identifier: BSD-3-Clause
# lib/maps: the feature maps phi (elementwise and kernelized), and the
# random projection W with its generator.  The generator and the draw
# (rng.c, draw.c) live in libcommon, built without floating-point
# contraction (EXACT_FP_FLAGS): W has the same bits on every platform.
GENERIC_SOURCES += lib/maps/features.c lib/maps/kernelized.c
INTERNAL_H += lib/maps/features.h lib/maps/draw.h
lib_libcommon_la_SOURCES += lib/maps/rng.c lib/maps/rng.h lib/maps/draw.c \
	lib/maps/draw.h
