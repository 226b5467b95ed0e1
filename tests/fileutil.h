/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fileutil.h -- scratch directories for the suites that write files
 * (checkpoints, file cases): made under $TMPDIR (default /tmp) and removed
 * with everything in them.
 */
#ifndef LINATTN_FILEUTIL_H
#define LINATTN_FILEUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new empty directory, malloc'd name. */
static inline char *temp_dir(void)
{
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    snprintf(dir, 4096, "%s/linattn-test-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

/* dir/name, malloc'd. */
static inline char *in_dir(const char *dir, const char *name)
{
    char *p = malloc(4096);
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

/* rm -r dir (directories made read-only by a test included; symbolic
 * links removed, not followed). */
static inline void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *p = in_dir(dir, de->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            chmod(p, 0700);
            remove_tree(p);
        } else {
            unlink(p);
        }
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

#endif
