/* log: leveled error log and a separate access log. Thread-safe: each line is formatted into a
 * stack buffer and written with one write(2), so lines from HTTP workers never interleave. */
#ifndef HD_LOG_H
#define HD_LOG_H

#include <stdint.h>

enum hd_log_level { HD_DEBUG, HD_INFO, HD_WARN, HD_ERROR };

extern enum hd_log_level hd_log_min;

/* path NULL or "-" = stderr (error log) / stdout (access log); "" for access = off. */
int hd_log_open(const char *error_path, const char *access_path, enum hd_log_level min);
void hd_log_close(void);
int hd_log_level_parse(const char *s, enum hd_log_level *out);

void hd_log_write(enum hd_log_level lvl, const char *reqid, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The id of the request (or job) the calling thread works for, shown on every line it logs
 * with reqid NULL: set by the HTTP layer around each callback of a request, and by the pool
 * for work a request queued (so deep helpers need no id argument). Thread-local; NULL
 * clears. The string must outlive the setting. */
void hd_log_set_context(const char *id);
const char *hd_log_context(void);

/* Tests the level before any formatting work. reqid may be NULL: the thread's context. */
#define HD_LOG(lvl, reqid, ...)                                                                    \
    do {                                                                                           \
        if ((lvl) >= hd_log_min)                                                                   \
            hd_log_write((lvl), (reqid), __VA_ARGS__);                                             \
    } while (0)

/* The error log's descriptor (for a crash handler's last words). */
int hd_log_error_fd(void);

/* One access-log line per finished request. */
void hd_log_access(const char *reqid, const char *remote, const char *method, const char *uri,
                   int status, uint64_t bytes_in, uint64_t bytes_out, double secs);

#endif
