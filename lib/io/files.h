/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * files.h -- replacing a file atomically, and opening one to read (POSIX,
 * with Linux's unnamed temporary files where they exist).
 */
#ifndef LINATTN_FILEIO_H
#define LINATTN_FILEIO_H

#include <stdint.h>
#include <stdio.h>

/* Writes len bytes at buf to path so that path holds either its previous
 * contents or all of the new bytes, whatever happens meanwhile.  Symbolic
 * links in path's last component are followed: the link's target is
 * replaced and the link stays.  An existing target that is not a regular
 * file (directory, FIFO, socket, device) is refused before anything is
 * opened (errno EISDIR or EINVAL).  The bytes go to an unnamed file in
 * the target's directory (O_TMPFILE), are flushed to the device (fsync),
 * linked as ".NAME.lattmp" and renamed over NAME; without unnamed files,
 * to a new file ".NAME.<16 hex digits>.lattmp" (created exclusively),
 * flushed and renamed.  Either name is shortened with a hash of NAME when
 * it would pass the directory's name length limit.  Then the directory is
 * synced, best effort.  A name left by a process killed between link and
 * rename is replaced by the next save to the same target.  Returns 0,
 * LINATTN_EIO (errno from the call that failed) or LINATTN_ENOMEM; on any
 * failure nothing is left behind and path is untouched. */
int linattn_i_write_atomic(const char *path, const void *buf, int64_t len);

/* path opened to read ("rb") when it is a regular file, without blocking
 * on a FIFO and without opening a device; NULL with errno otherwise
 * (EISDIR for a directory, EINVAL for another kind of file, or open's). */
FILE *linattn_i_open_regular(const char *path);

#endif
