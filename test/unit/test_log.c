/* Unit tests for common/log: files opened by hd_log_open, level filtering before formatting,
 * the line format of error and access logs, truncation of long lines. Restores the default
 * sinks (stderr, access off, info) when done. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "test/unit/hd_test.h"

static int evaluated;

static int side_effect(void)
{
    evaluated++;
    return 1;
}

static char *slurp(const char *dir, const char *name)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return hd_test_slurp(path, NULL);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* "2024-05-01T12:34:56.789Z " at the start of a line. */
static int stamp_ok(const char *l)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";

    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        if (shape[i] == 'd' ? (l[i] < '0' || l[i] > '9') : l[i] != shape[i])
            return 0;
    }
    return 1;
}

/* The line of s containing needle (copied into out), or 0. */
static int find_line(const char *s, const char *needle, char *out, size_t n)
{
    const char *h = s ? strstr(s, needle) : NULL, *b, *e;

    if (!h)
        return 0;
    for (b = h; b > s && b[-1] != '\n'; b--)
        ;
    e = strchr(h, '\n');
    snprintf(out, n, "%.*s", (int)(e ? e - b : (long)strlen(b)), b);
    return 1;
}

HD_SUITE(log)
{
    char dir[] = "/tmp/hd-log-XXXXXX", errp[256], accp[256], line[4096];
    enum hd_log_level lv;
    char *s;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(errp, sizeof(errp), "%s/error.log", dir);
    snprintf(accp, sizeof(accp), "%s/access.log", dir);

    /* Level names. */
    CHECK_EQ_INT(hd_log_level_parse("debug", &lv), 0);
    CHECK_EQ_INT(lv, HD_DEBUG);
    CHECK_EQ_INT(hd_log_level_parse("info", &lv), 0);
    CHECK_EQ_INT(lv, HD_INFO);
    CHECK_EQ_INT(hd_log_level_parse("warn", &lv), 0);
    CHECK_EQ_INT(lv, HD_WARN);
    CHECK_EQ_INT(hd_log_level_parse("error", &lv), 0);
    CHECK_EQ_INT(lv, HD_ERROR);
    CHECK_EQ_INT(hd_log_level_parse("verbose", &lv), -EINVAL);
    CHECK_EQ_INT(hd_log_level_parse("", &lv), -EINVAL);

    CHECK_EQ_INT(hd_log_open(errp, accp, HD_INFO), 0);
    CHECK_EQ_INT(hd_log_min, HD_INFO);

    /* At info: debug is suppressed without evaluating its arguments. */
    evaluated = 0;
    HD_LOG(HD_DEBUG, "r-dbg", "debug-line %d", side_effect());
    CHECK_EQ_INT(evaluated, 0);
    HD_LOG(HD_INFO, "r-inf", "info-line key=%s n=%d", "v", side_effect());
    CHECK_EQ_INT(evaluated, 1);
    HD_LOG(HD_WARN, NULL, "warn-line what=%s", "reading body");
    HD_LOG(HD_ERROR, "r-err", "error-line %s", "x");
    hd_log_access("r-acc", "127.0.0.1", "GET", "/bkt/some/key?x-id=1&a=b", 206, 5, 1048576, 0.0125);
    hd_log_access("r-acc2", NULL, "PUT", "/bkt/k2", 200, 0, 0, 0);

    s = slurp(dir, "error.log");
    CHECK(s != NULL);
    CHECK(s && strstr(s, "debug-line") == NULL);
    CHECK(s && strstr(s, "r-dbg") == NULL);
    CHECK_EQ_INT(count_lines(s), 3);
    CHECK(s && s[strlen(s) - 1] == '\n');
    CHECK(find_line(s, "info-line", line, sizeof(line)));
    CHECK(stamp_ok(line));
    CHECK(strstr(line, "info") != NULL);
    CHECK(strstr(line, "req=r-inf") != NULL);
    CHECK(strstr(line, "info-line key=v n=1") != NULL);
    CHECK(find_line(s, "warn-line", line, sizeof(line)));
    CHECK(stamp_ok(line));
    CHECK(strstr(line, "warn") != NULL);
    CHECK(strstr(line, "req=- ") != NULL); /* NULL request id */
    CHECK(find_line(s, "error-line", line, sizeof(line)));
    CHECK(strstr(line, "error") != NULL);
    CHECK(strstr(line, "req=r-err") != NULL);
    CHECK(s && strstr(s, "r-acc") == NULL); /* access lines go to the access log only */
    free(s);

    s = slurp(dir, "access.log");
    CHECK(s != NULL);
    CHECK_EQ_INT(count_lines(s), 2);
    CHECK(s && strstr(s, "info-line") == NULL);
    CHECK(find_line(s, "req=r-acc ", line, sizeof(line)));
    CHECK(stamp_ok(line));
    CHECK(strstr(line, "status=206") != NULL);
    CHECK(strstr(line, "uri=/bkt/some/key?x-id=1&a=b") != NULL);
    CHECK(strstr(line, "method=GET") != NULL);
    CHECK(strstr(line, "remote=127.0.0.1") != NULL);
    CHECK(strstr(line, "in=5 ") != NULL);
    CHECK(strstr(line, "out=1048576") != NULL);
    CHECK(strstr(line, "ms=12.5") != NULL);
    CHECK(find_line(s, "req=r-acc2", line, sizeof(line)));
    CHECK(strstr(line, "status=200") != NULL);
    CHECK(strstr(line, "uri=/bkt/k2") != NULL);
    CHECK(strstr(line, "remote=-") != NULL);
    free(s);

    /* At warn: info is suppressed too; reopening appends to the same files. */
    CHECK_EQ_INT(hd_log_open(errp, accp, HD_WARN), 0);
    CHECK_EQ_INT(hd_log_min, HD_WARN);
    HD_LOG(HD_INFO, "r2", "second-info");
    HD_LOG(HD_WARN, "r2", "second-warn");
    s = slurp(dir, "error.log");
    CHECK(s && strstr(s, "second-info") == NULL);
    CHECK(s && strstr(s, "second-warn") != NULL);
    CHECK(s && strstr(s, "info-line") != NULL); /* O_APPEND, not truncated */
    CHECK_EQ_INT(count_lines(s), 4);
    free(s);

    /* At debug everything is written. */
    CHECK_EQ_INT(hd_log_open(errp, accp, HD_DEBUG), 0);
    HD_LOG(HD_DEBUG, "r3", "third-debug");
    s = slurp(dir, "error.log");
    CHECK(s && strstr(s, "third-debug") != NULL);
    free(s);

    /* A failed open reports -errno and keeps the current sinks. */
    CHECK(hd_log_open("/nonexistent-dir/e.log", accp, HD_INFO) < 0);
    CHECK(hd_log_open(errp, "/nonexistent-dir/a.log", HD_INFO) < 0);
    HD_LOG(HD_ERROR, "r4", "after-failed-open");
    s = slurp(dir, "error.log");
    CHECK(s && strstr(s, "after-failed-open") != NULL);
    free(s);

    /* Over-long lines are cut to one line of at most 2 KiB, still newline-terminated; the
     * access log keeps at most 1024 bytes of the URI. */
    {
        char *msg = malloc(5000), *uri = malloc(3000), *l;
        CHECK(msg && uri);
        if (msg && uri) {
            memset(msg, 'm', 4999);
            msg[4999] = '\0';
            memset(uri, 'u', 2999);
            uri[0] = '/';
            uri[2999] = '\0';
            CHECK_EQ_INT(hd_log_open(errp, accp, HD_INFO), 0);
            HD_LOG(HD_ERROR, "r5", "long=%s", msg);
            hd_log_access("r5", "::1", "GET", uri, 200, 0, 0, 0.001);
            s = slurp(dir, "error.log");
            l = s ? strstr(s, "req=r5") : NULL;
            CHECK(l != NULL);
            if (l) {
                char *e = strchr(l, '\n');
                CHECK(e != NULL && e[1] == '\0'); /* one line, the last one */
                while (l > s && l[-1] != '\n')
                    l--;
                CHECK(e && (size_t)(e - l) + 1 <= 2048);
                CHECK(e && (size_t)(e - l) > 1500);
            }
            free(s);
            s = slurp(dir, "access.log");
            l = s ? strstr(s, "req=r5") : NULL;
            CHECK(l != NULL);
            if (l) {
                char *u = strstr(l, "uri=/"), *e = strchr(l, '\n');
                CHECK(u && e && e - (u + 4) == 1024);
                CHECK(e && e[1] == '\0');
            }
            free(s);
        }
        free(msg);
        free(uri);
    }

    /* A very long request id must not overrun the line buffer (run in a child so a crash
     * or sanitizer report fails this check instead of killing the runner). */
    {
        pid_t pid;
        int status = 0;

        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            /* lengths that end the prefix just past the buffer (into a sanitizer redzone or
             * the stack canary) and far past it */
            static const size_t lens[] = {2010, 2014, 2020, 2040, 3000};
            char *id = malloc(3001);
            if (!id)
                _exit(2);
            for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
                memset(id, 'i', lens[j]);
                id[lens[j]] = '\0';
                hd_log_write(HD_ERROR, id, "tail-%s", "after-long-id");
            }
            free(id);
            _exit(0);
        }
        CHECK(pid > 0);
        if (pid > 0) {
            CHECK(waitpid(pid, &status, 0) == pid);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fprintf(stderr, "  hd_log_write with a 2010..3000-byte reqid: child %s %d\n",
                        WIFSIGNALED(status) ? "killed by signal" : "exited",
                        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            s = slurp(dir, "error.log");
            {
                char *l = s ? strstr(s, "iiiiiiiiii") : NULL;
                CHECK(l != NULL);
                if (l) {
                    char *e = strchr(l, '\n');
                    while (l > s && l[-1] != '\n')
                        l--;
                    CHECK(e && (size_t)(e - l) + 1 <= 2048);
                }
            }
            free(s);
        }
    }

    /* Access log off (""): nothing more is written to the old file. */
    CHECK_EQ_INT(hd_log_open(errp, "", HD_INFO), 0);
    hd_log_access("r6", "::1", "GET", "/off", 200, 0, 0, 0);
    s = slurp(dir, "access.log");
    CHECK(s && strstr(s, "uri=/off") == NULL);
    free(s);

    /* Back to the defaults for the other suites. */
    CHECK_EQ_INT(hd_log_open("-", "", HD_INFO), 0);
    hd_log_close();
    hd_log_min = HD_INFO;
    snprintf(line, sizeof(line), "%s/error.log", dir);
    unlink(line);
    snprintf(line, sizeof(line), "%s/access.log", dir);
    unlink(line);
    rmdir(dir);
}
