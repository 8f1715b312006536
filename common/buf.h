/* buf: growable byte buffer for building responses (XML, JSON, headers).
 * Not thread-safe; owned by one request at a time. */
#ifndef HD_BUF_H
#define HD_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct hd_buf {
    char *data; /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    int oom; /* sticky: set once an allocation failed; further appends are no-ops */
};

void hd_buf_init(struct hd_buf *b);
void hd_buf_cleanup(struct hd_buf *b);
void hd_buf_reset(struct hd_buf *b);
int hd_buf_append(struct hd_buf *b, const void *data, size_t len);
int hd_buf_puts(struct hd_buf *b, const char *s);
int hd_buf_printf(struct hd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int hd_buf_vprintf(struct hd_buf *b, const char *fmt, va_list ap);
/* Takes the data out of the buffer (caller frees); the buffer is left empty. */
char *hd_buf_steal(struct hd_buf *b, size_t *len);

#endif
