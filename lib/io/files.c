/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * files.c -- atomic replacement of a file, and opening one to read
 * (io/files.h).
 *
 * Where the system offers it (Linux's O_TMPFILE), the new bytes go to an
 * unnamed file in the target's directory: a process killed while writing
 * or syncing it leaves nothing behind.  The file then gets a name (linkat)
 * and is renamed over the target; that name is the same for every save to
 * one target, so the one thing a kill can leave (between those two calls)
 * is replaced by the next save there.  Elsewhere the bytes go to a named
 * temporary file, as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "io/files.h"
#include "linattn.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

/* Symbolic links followed before giving up (Linux's own limit). */
#define MAX_LINKS 40

/* path's final component with its symbolic links followed, so that a save
 * writes through a link to its target (the target's directory receives
 * the new file); a dangling link gives the path it points to.  malloc'd;
 * NULL with errno set (ELOOP, ENOMEM, or lstat's). */
static char *resolve(const char *path)
{
    char *p = strdup(path);
    for (int hops = 0; p; hops++) {
        struct stat sb;
        if (lstat(p, &sb)) {
            if (errno == ENOENT)
                return p; /* a new file (or a dangling link's target) */
            break;
        }
        if (!S_ISLNK(sb.st_mode))
            return p;
        if (hops == MAX_LINKS) {
            errno = ELOOP;
            break;
        }
        size_t cap = (size_t)(sb.st_size > 0 ? sb.st_size : PATH_MAX) + 1;
        char *link = malloc(cap);
        ssize_t got = link ? readlink(p, link, cap) : -1;
        if (got < 0 || (size_t)got >= cap) {
            if (got >= 0)
                errno = ENAMETOOLONG; /* changed while being read */
            free(link);
            break;
        }
        link[got] = '\0';
        const char *slash = strrchr(p, '/');
        char *next;
        if (link[0] == '/' || !slash) { /* absolute, or relative to "." */
            next = link;
        } else { /* relative to the link's own directory */
            size_t dir = (size_t)(slash - p) + 1;
            next = malloc(dir + (size_t)got + 1);
            if (next) {
                memcpy(next, p, dir);
                memcpy(next + dir, link, (size_t)got + 1);
            }
            free(link);
        }
        free(p);
        p = next;
    }
    int err = errno;
    free(p);
    errno = err ? err : ENOMEM;
    return NULL;
}

/* Nonzero (errno set) unless st describes a regular file: directories are
 * EISDIR, FIFOs, sockets and devices EINVAL. */
static int not_regular(const struct stat *st)
{
    if (S_ISREG(st->st_mode))
        return 0;
    errno = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
    return 1;
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

/* The bytes, synced, into fd, which is closed; 0 or -1 with the errno of
 * the first call that failed. */
static int fill(int fd, const void *buf, int64_t len)
{
    int failed = 0, err = 0;
    if (write_all(fd, buf, len) || fsync(fd))
        failed = 1, err = errno;
    if (close(fd) && !failed)
        failed = 1, err = errno;
    errno = err;
    return failed ? -1 : 0;
}

/* A name for a file beside base in its directory (whose names may have
 * name_max bytes): "." base "." tag, or when that is too long, base cut
 * short with a hash of all of it, so that every target has its own name
 * and any name the file system takes for base works. */
static void side_name(char *out, size_t cap, const char *base, long name_max,
                      const char *tag)
{
    size_t len = strlen(base), extra = strlen(tag) + 2;
    if ((long)(len + extra) <= name_max) {
        snprintf(out, cap, ".%s.%s", base, tag);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)base[i]) * 0x100000001b3ull;
    int keep = (int)(name_max - (long)extra - 17);
    snprintf(out, cap, ".%.*s~%016llx.%s", keep > 0 ? keep : 0, base,
             (unsigned long long)h, tag);
}

/* Where the system has unnamed temporary files: 0 (done), -1 with errno
 * (failed: nothing left behind), or 1 (no such files here: the caller
 * falls back to a named temporary). */
static int replace_unnamed(int dirfd, const char *base, long name_max,
                           const void *buf, int64_t len)
{
#if defined(O_TMPFILE) && defined(AT_SYMLINK_FOLLOW)
    int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? 1
                                                                          : -1;
    /* linkat needs the descriptor open: fill() closes it, so sync first */
    if (write_all(fd, buf, len) || fsync(fd)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    char tmp[NAME_MAX + 1 > 256 ? NAME_MAX + 1 : 256], proc[64];
    side_name(tmp, sizeof tmp, base, name_max, "lattmp");
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int status = -1, linked = 0;
    for (int attempt = 0; attempt < 64 && status < 0; attempt++) {
        if (linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW)) {
            if (errno == EEXIST) { /* left by a killed save, or a racing  */
                unlinkat(dirfd, tmp, 0); /* saver's (which retries too)  */
                continue;
            }
            status = errno == ENOENT ? 1 : -1; /* ENOENT: no /proc */
            break;
        }
        linked = 1;
        if (renameat(dirfd, tmp, dirfd, base) == 0)
            status = 0, linked = 0;
        else if (errno != ENOENT) /* ENOENT: a racing save took the name */
            break;
    }
    int err = errno;
    if (status < 0 && linked)
        unlinkat(dirfd, tmp, 0); /* the rename failed: our name goes */
    close(fd);
    errno = err;
    return status;
#else
    (void)dirfd, (void)base, (void)name_max, (void)buf, (void)len;
    return 1;
#endif
}

/* A named temporary file beside base, unique to this save (process id,
 * time, counter): written, synced and renamed over base.  0 or -1 with
 * errno; the temporary is removed on failure. */
static int replace_named(int dirfd, const char *base, long name_max,
                         const void *buf, int64_t len)
{
    static atomic_uint_fast64_t counter;
    uint64_t seed = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    char tmp[NAME_MAX + 1 > 256 ? NAME_MAX + 1 : 256], tag[32];
    int fd = -1;
    for (int attempt = 0; attempt < 64 && fd < 0; attempt++) {
        /* splitmix64's finalizer spreads the bits over the name */
        uint64_t x = seed + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&counter, 1) + 1);
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        x ^= x >> 31;
        snprintf(tag, sizeof tag, "%016llx.lattmp", (unsigned long long)x);
        side_name(tmp, sizeof tmp, base, name_max, tag);
        /* O_EXCL: a collision (or a planted link) is a retry, never a
         * shared file */
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    if (fill(fd, buf, len) || renameat(dirfd, tmp, dirfd, base)) {
        int err = errno;
        unlinkat(dirfd, tmp, 0);
        errno = err;
        return -1;
    }
    return 0;
}

int linattn_i_write_atomic(const char *path, const void *buf, int64_t len)
{
    char *target = resolve(path);
    if (!target)
        return errno == ENOMEM ? LINATTN_ENOMEM : LINATTN_EIO;
    /* An existing target must be a regular file: a FIFO, socket, device
     * or directory is refused before anything is opened or created. */
    struct stat sb;
    if (stat(target, &sb) == 0 && not_regular(&sb)) {
        int err = errno;
        free(target);
        errno = err;
        return LINATTN_EIO;
    }
    char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    int dirfd;
    if (!slash) {
        dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else if (slash == target) {
        dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        *slash = '\0';
        dirfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    int status = -1;
    if (dirfd >= 0 && *base) {
        long name_max = fpathconf(dirfd, _PC_NAME_MAX);
        if (name_max < 14)
            name_max = 255;
        status = replace_unnamed(dirfd, base, name_max, buf, len);
        if (status > 0)
            status = replace_named(dirfd, base, name_max, buf, len);
        /* the rename itself durable: best effort (some file systems
         * refuse fsync on a directory; the file is in place anyway) */
        if (status == 0)
            (void)fsync(dirfd);
    } else if (dirfd >= 0) {
        errno = EISDIR; /* "dir/": a directory's name */
    }
    int err = errno;
    if (dirfd >= 0)
        close(dirfd);
    free(target);
    errno = err;
    return status ? LINATTN_EIO : 0;
}

FILE *linattn_i_open_regular(const char *path)
{
    /* stat first, so that a device is never opened (opening some has side
     * effects); then O_NONBLOCK, so that a FIFO put there meanwhile does
     * not wait for a writer, and fstat of what was opened. */
    struct stat sb;
    if (stat(path, &sb) || not_regular(&sb))
        return NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &sb) || not_regular(&sb) || flags < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
        int err = errno;
        close(fd);
        errno = err;
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int err = errno;
        close(fd);
        errno = err;
    }
    return f;
}
