/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fileio.h -- replacing a file atomically (POSIX).
 */
#ifndef LINATTN_FILEIO_H
#define LINATTN_FILEIO_H

#include <stdint.h>

/* Writes len bytes at buf to path so that path holds either its previous
 * contents or all of the new bytes, whatever happens meanwhile: the bytes
 * go to a new file next to path (path.<16 hex digits>.tmp, created
 * exclusively with mode 0666 less the umask, as fopen would), are flushed
 * to the device (fsync), and the file is renamed over path; then the
 * directory is synced, best effort, so that the rename itself is durable.
 * Returns 0, LINATTN_EIO (errno from the call that failed) or
 * LINATTN_ENOMEM.  On any failure the temporary file is removed and path
 * is untouched. */
int linattn_i_write_atomic(const char *path, const void *buf, int64_t len);

#endif
