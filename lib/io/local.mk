# SPDX-License-Identifier: BSD-3-Clause
# lib/io: checkpoint/restart (doc/checkpoint-format.md).  The public calls
# are precision-generic; the format (framing, byte order, CRC-32) and the
# atomic replacement of files are shared, in libcommon.
GENERIC_SOURCES += lib/io/checkpoint.c
INTERNAL_H += lib/io/format.h lib/io/files.h
lib_libcommon_la_SOURCES += lib/io/crc32.c lib/io/crc32.h lib/io/format.c \
	lib/io/format.h lib/io/files.c lib/io/files.h
