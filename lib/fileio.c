/* SPDX-License-Identifier: BSD-3-Clause */
/* fileio.c -- atomic replacement of a file (fileio.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fileio.h"
#include "linattn.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* Opens a new temporary file next to path, its name written to tmp (room
 * for strlen(path) + 22 bytes).  Names mix the process id, the time and a
 * process-wide counter, so threads and processes saving next to each
 * other do not collide; O_EXCL makes a collision (or a planted symlink) a
 * retry, never a shared file.  Returns the descriptor or -1 (errno). */
static int open_temp(const char *path, char *tmp, size_t cap)
{
    static atomic_uint_fast64_t counter;
    uint64_t base = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    for (int attempt = 0; attempt < 64; attempt++) {
        /* splitmix64's finalizer spreads the bits over the name. */
        uint64_t x = base + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&counter, 1) + 1);
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        x ^= x >> 31;
        snprintf(tmp, cap, "%s.%016llx.tmp", path, (unsigned long long)x);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static int write_all(int fd, const unsigned char *p, int64_t len)
{
    while (len > 0) {
        /* Linux writes at most about 2 GiB per call. */
        size_t chunk = len > ((int64_t)1 << 30) ? (size_t)1 << 30 : (size_t)len;
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1; /* (0 cannot happen for a regular file) */
        p += w;
        len -= w;
    }
    return 0;
}

/* fsync of the directory holding path, so that a rename into it survives a
 * crash.  Best effort: some file systems refuse fsync on a directory, and
 * the new file is in place by then either way. */
static void sync_dir(const char *path, char *scratch)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        strcpy(scratch, ".");
    else if (slash == path)
        strcpy(scratch, "/");
    else {
        memcpy(scratch, path, (size_t)(slash - path));
        scratch[slash - path] = '\0';
    }
    int fd = open(scratch, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int linattn_i_write_atomic(const char *path, const void *buf, int64_t len)
{
    size_t cap = strlen(path) + 22;
    char *tmp = malloc(cap);
    if (!tmp)
        return LINATTN_ENOMEM;
    int fd = open_temp(path, tmp, cap);
    if (fd < 0) {
        int err = errno;
        free(tmp);
        errno = err;
        return LINATTN_EIO;
    }
    /* Keep the errno of the first call that failed, for the caller. */
    int failed = 0, err = 0;
    if (write_all(fd, buf, len) || fsync(fd))
        failed = 1, err = errno;
    if (close(fd) && !failed)
        failed = 1, err = errno;
    if (!failed && rename(tmp, path))
        failed = 1, err = errno;
    if (failed) {
        unlink(tmp);
        free(tmp);
        errno = err;
        return LINATTN_EIO;
    }
    sync_dir(path, tmp); /* path's directory name fits in tmp */
    free(tmp);
    return 0;
}
