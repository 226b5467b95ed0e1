/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_files.c -- checkpoint files on every kind of path (nothing lost on bad
 * input: no crash, no half-written file), compiled once per precision: names
 * as long as the file system takes, FIFOs, sockets and devices refused
 * without blocking, symbolic links written through to their targets,
 * read-only directories (as an unprivileged user, also when the suite runs as
 * root), and a saving process killed again and again: the file under the real
 * name always loads, and no temporary file outlives the next save.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fileutil.h"
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR

/* Entries of dir other than . and ..; *temps counts those that look like a
 * save's temporary file. */
static int entries(const char *dir, int *temps)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0, t = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        n++;
        t += strstr(de->d_name, "tmp") != NULL;
    }
    closedir(d);
    if (temps)
        *temps = t;
    return n;
}

typedef struct {
    P(plan) *plan;
    P(state) *a, *b; /* two different states of one plan */
    unsigned char *ba, *bb;
    int64_t len;
} pair;

static pair pair_make(void)
{
    pair x;
    ck_assert_int_eq(P(plan_create)(&x.plan, LINATTN_MAP_ELU1, 3, 2, NULL), 0);
    P(state_create)(&x.a, x.plan);
    P(state_create)(&x.b, x.plan);
    real k[6] = {1, 2, 3, 4, 5, 6}, v[4] = {1, -1, 2, -2};
    P(state_update)(x.a, ROW, 2, k, 3, v, 2);
    P(state_update)(x.b, ROW, 1, k, 3, v, 2);
    P(state_save_size)(x.a, &x.len);
    x.ba = malloc((size_t)x.len);
    x.bb = malloc((size_t)x.len);
    P(state_save)(x.a, x.ba, x.len, NULL);
    P(state_save)(x.b, x.bb, x.len, NULL);
    return x;
}

static void pair_free(pair *x)
{
    free(x->ba), free(x->bb);
    P(state_destroy)(x->a), P(state_destroy)(x->b);
    P(plan_destroy)(x->plan);
}

/* Which of the pair's checkpoints the file at path holds: 'a', 'b', or 0
 * when it does not load (or holds something else). */
static int holds(const pair *x, const char *path)
{
    P(state) *t;
    P(state_create)(&t, x->plan);
    int which = 0;
    if (P(state_load_file)(t, path) == 0) {
        unsigned char *now = malloc((size_t)x->len);
        P(state_save)(t, now, x->len, NULL);
        which = !memcmp(now, x->ba, (size_t)x->len)   ? 'a'
                : !memcmp(now, x->bb, (size_t)x->len) ? 'b'
                                                      : 0;
        free(now);
    }
    P(state_destroy)(t);
    return which;
}

/* Defect 6: a name of 250 characters (the temporary name once added 21,
 * ENAMETOOLONG) and one of 255, the limit: saved, replaced, loaded, and
 * nothing else in the directory. */
START_TEST(long_names)
{
    pair x = pair_make();
    char *dir = temp_dir();
    for (int len = 250; len <= 255; len += 5) {
        char name[256];
        memset(name, 'n', (size_t)len);
        name[len] = '\0';
        char *path = in_dir(dir, name);
        ck_assert_int_eq(P(state_save_file)(x.a, path), 0);
        ck_assert_int_eq(P(state_save_file)(x.b, path), 0);
        ck_assert_int_eq(holds(&x, path), 'b');
        ck_assert_int_eq(entries(dir, NULL), 1);
        unlink(path);
        free(path);
    }
    /* one past the limit: the file system's own refusal */
    char name[257];
    memset(name, 'n', 256);
    name[256] = '\0';
    char *path = in_dir(dir, name);
    errno = 0;
    ck_assert_int_eq(P(state_save_file)(x.a, path), LINATTN_EIO);
    ck_assert_int_eq(errno, ENAMETOOLONG);
    ck_assert_int_eq(entries(dir, NULL), 0);
    free(path);
    remove_tree(dir);
    free(dir);
    pair_free(&x);
}
END_TEST

/* Defect 7: a FIFO without a writer (fopen used to wait for one forever),
 * a UNIX socket, a character device and a directory are refused by the
 * loader (LINATTN_EIO, errno EINVAL or EISDIR) at once; the saver refuses
 * to replace a FIFO or a socket, and leaves it as it was.  An alarm turns
 * a call that blocks into a failure. */
START_TEST(special_files_refused)
{
    pair x = pair_make();
    char *dir = temp_dir(), *fifo = in_dir(dir, "fifo"), *sock = in_dir(dir, "sock");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock);
    ck_assert(s >= 0 && bind(s, (struct sockaddr *)&addr, sizeof addr) == 0);
    alarm(20);
    const char *paths[4] = {fifo, sock, "/dev/null", dir};
    const int errs[4] = {EINVAL, EINVAL, EINVAL, EISDIR};
    for (int i = 0; i < 4; i++) {
        errno = 0;
        ck_assert_int_eq(P(state_load_file)(x.a, paths[i]), LINATTN_EIO);
        ck_assert_int_eq(errno, errs[i]);
    }
    for (int i = 0; i < 2; i++) {
        errno = 0;
        ck_assert_int_eq(P(state_save_file)(x.a, paths[i]), LINATTN_EIO);
        ck_assert_int_eq(errno, EINVAL);
    }
    alarm(0);
    struct stat sb;
    ck_assert(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    ck_assert(stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode));
    ck_assert_int_eq(entries(dir, NULL), 2);
    close(s);
    remove_tree(dir);
    free(dir), free(fifo), free(sock);
    pair_free(&x);
}
END_TEST

/* Defect 9: saving to a symbolic link writes through to the link's target,
 * as most tools do: the link stays a link and its target (in another
 * directory, through a relative or an absolute link, a chain of two, or a
 * dangling link) holds the new checkpoint.  A loop of links: ELOOP. */
START_TEST(symlinks_written_through)
{
    pair x = pair_make();
    char *dir = temp_dir(), *sub = in_dir(dir, "sub");
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    char *real_ck = in_dir(sub, "real.ck"), *rel = in_dir(dir, "rel"),
         *abs = in_dir(dir, "abs"), *chain = in_dir(dir, "chain"),
         *dang = in_dir(dir, "dangling"), *loop1 = in_dir(dir, "loop1"),
         *loop2 = in_dir(dir, "loop2"), *fresh = in_dir(sub, "fresh.ck");
    ck_assert_int_eq(P(state_save_file)(x.a, real_ck), 0);
    ck_assert_int_eq(symlink("sub/real.ck", rel), 0);
    ck_assert_int_eq(symlink(real_ck, abs), 0);
    ck_assert_int_eq(symlink("rel", chain), 0);
    ck_assert_int_eq(symlink("sub/fresh.ck", dang), 0);
    ck_assert_int_eq(symlink("loop2", loop1), 0);
    ck_assert_int_eq(symlink("loop1", loop2), 0);
    const char *links[3] = {rel, abs, chain};
    for (int i = 0; i < 3; i++) {
        P(state) *s = i % 2 ? x.a : x.b;
        int want = i % 2 ? 'a' : 'b';
        ck_assert_int_eq(P(state_save_file)(s, links[i]), 0);
        struct stat sb;
        ck_assert(lstat(links[i], &sb) == 0 && S_ISLNK(sb.st_mode));
        ck_assert_int_eq(holds(&x, real_ck), want);
        ck_assert_int_eq(holds(&x, links[i]), want);
    }
    ck_assert_int_eq(P(state_save_file)(x.b, dang), 0);
    ck_assert_int_eq(holds(&x, fresh), 'b');
    errno = 0;
    ck_assert_int_eq(P(state_save_file)(x.a, loop1), LINATTN_EIO);
    ck_assert_int_eq(errno, ELOOP);
    /* nothing but the links in dir, the two files in sub */
    ck_assert_int_eq(entries(dir, NULL), 7);
    ck_assert_int_eq(entries(sub, NULL), 2);
    remove_tree(dir);
    free(dir), free(sub), free(real_ck), free(rel), free(abs), free(chain);
    free(dang), free(loop1), free(loop2), free(fresh);
    pair_free(&x);
}
END_TEST

/* A read-only directory: LINATTN_EIO (EACCES), the old checkpoint intact,
 * nothing created.  Root writes there anyway, so when the suite runs as
 * root (CI) the check runs in a child that has become nobody (65534). */
START_TEST(read_only_directory)
{
    pair x = pair_make();
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    ck_assert_int_eq(P(state_save_file)(x.a, path), 0);
    int root = geteuid() == 0;
    if (root) {
        ck_assert_int_eq(chown(dir, 65534, 65534), 0);
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
    }
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        /* no ck_assert here: report through the exit status */
        if (root && (setgid(65534) || setuid(65534)))
            _exit(10);
        if (chmod(dir, 0500))
            _exit(11);
        errno = 0;
        int st = P(state_save_file)(x.b, path), err = errno;
        chmod(dir, 0700);
        if (st != LINATTN_EIO || err != EACCES)
            _exit(12);
        _exit(0);
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child: %d",
                  WEXITSTATUS(ws));
    ck_assert_int_eq(holds(&x, path), 'a');
    ck_assert_int_eq(entries(dir, NULL), 1);
    remove_tree(dir);
    free(dir), free(path);
    pair_free(&x);
}
END_TEST

/* Defect 8: a process saving in a loop (two states in turn) is killed with
 * SIGKILL at random moments, KILLS times.  After every kill the file under
 * the real name loads and holds one of the two checkpoints, and at most
 * one temporary name exists (the next save's to replace); after a final
 * save, none. */
#define KILLS 100
START_TEST(killed_saves_leave_nothing)
{
    pair x = pair_make();
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    ck_assert_int_eq(P(state_save_file)(x.a, path), 0);
    uint64_t seed = 99;
    int most = 0, seen = 0;
    for (int kill_no = 0; kill_no < KILLS; kill_no++) {
        pid_t pid = fork();
        ck_assert(pid >= 0);
        if (pid == 0) {
            for (unsigned i = 0;; i++)
                P(state_save_file)(i % 2 ? x.a : x.b, path);
        }
        struct timespec t = {0, (long)(3e6 * test_uniform(&seed))};
        nanosleep(&t, NULL);
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
        ck_assert_msg(holds(&x, path) != 0, "kill %d: the file does not load",
                      kill_no);
        int temps = 0;
        entries(dir, &temps);
        most = temps > most ? temps : most;
        seen += temps > 0;
    }
    ck_assert_msg(most <= 1, "%d temporary files at once", most);
    ck_assert_int_eq(P(state_save_file)(x.b, path), 0);
    int temps = -1;
    ck_assert_int_eq(entries(dir, &temps), 1);
    ck_assert_int_eq(temps, 0);
    fprintf(stderr, "killed_saves_leave_nothing: %d kills, a temporary name "
                    "seen after %d of them\n", KILLS, seen);
    remove_tree(dir);
    free(dir), free(path);
    pair_free(&x);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("files " PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, long_names);
    tcase_add_test(tc, special_files_refused);
    tcase_add_test(tc, symlinks_written_through);
    tcase_add_test(tc, read_only_directory);
    tcase_add_test(tc, killed_saves_leave_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
