#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum hd_log_level hd_log_min = HD_INFO;
static int err_fd = 2;
static int acc_fd = -1;

static const char *names[] = {"debug", "info", "warn", "error"};

int hd_log_level_parse(const char *s, enum hd_log_level *out)
{
    int i;

    for (i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum hd_log_level)i;
            return 0;
        }
    return -EINVAL;
}

static int open_log(const char *path, int dflt)
{
    int fd;

    if (!path || strcmp(path, "-") == 0)
        return dflt;
    if (!*path)
        return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return fd < 0 ? -errno : fd;
}

int hd_log_open(const char *error_path, const char *access_path, enum hd_log_level min)
{
    int e, a;

    e = open_log(error_path, 2);
    if (e < -1)
        return e;
    a = open_log(access_path, 1);
    if (a < -1) {
        if (e > 2)
            close(e);
        return a;
    }
    hd_log_close();
    err_fd = e < 0 ? 2 : e;
    acc_fd = a;
    hd_log_min = min;
    return 0;
}

void hd_log_close(void)
{
    if (err_fd > 2)
        close(err_fd);
    if (acc_fd > 2)
        close(acc_fd);
    err_fd = 2;
    acc_fd = -1;
}

static size_t stamp(char *p, size_t n)
{
    struct timeval tv;
    struct tm tm;
    size_t k;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    k = strftime(p, n, "%Y-%m-%dT%H:%M:%S", &tm);
    k += (size_t)snprintf(p + k, n - k, ".%03dZ", (int)(tv.tv_usec / 1000));
    return k;
}

static void emit(int fd, char *line, size_t len, size_t cap)
{
    if (len >= cap - 1)
        len = cap - 2;
    line[len++] = '\n';
    if (write(fd, line, len) < 0) {
        /* nowhere left to report a failing log */
    }
}

static _Thread_local const char *ctx_id;

void hd_log_set_context(const char *id)
{
    ctx_id = id;
}

const char *hd_log_context(void)
{
    return ctx_id;
}

void hd_log_write(enum hd_log_level lvl, const char *reqid, const char *fmt, ...)
{
    char line[2048];
    size_t k;
    int n;
    va_list ap;

    k = stamp(line, sizeof(line));
    n = snprintf(line + k, sizeof(line) - k, " %-5s req=%.64s ", names[lvl],
                 reqid    ? reqid
                 : ctx_id ? ctx_id
                          : "-");
    if (n > 0)
        k += (size_t)n;
    if (k >= sizeof(line))
        k = sizeof(line) - 1; /* snprintf reports the untruncated length */
    va_start(ap, fmt);
    n = vsnprintf(line + k, sizeof(line) - k, fmt, ap);
    va_end(ap);
    if (n > 0)
        k += (size_t)n;
    emit(err_fd, line, k > sizeof(line) ? sizeof(line) : k, sizeof(line));
}

void hd_log_access(const char *reqid, const char *remote, const char *method, const char *uri,
                   int status, uint64_t bytes_in, uint64_t bytes_out, double secs)
{
    char line[2048];
    size_t k;
    int n;

    if (acc_fd < 0)
        return;
    k = stamp(line, sizeof(line));
    n = snprintf(line + k, sizeof(line) - k,
                 " req=%.64s remote=%s method=%s status=%d in=%llu out=%llu ms=%.3f uri=%.1024s",
                 reqid, remote ? remote : "-", method, status, (unsigned long long)bytes_in,
                 (unsigned long long)bytes_out, secs * 1e3, uri);
    if (n > 0)
        k += (size_t)n;
    emit(acc_fd, line, k > sizeof(line) ? sizeof(line) : k, sizeof(line));
}

int hd_log_error_fd(void)
{
    return err_fd;
}
