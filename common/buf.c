#include "common/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hd_buf_init(struct hd_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void hd_buf_cleanup(struct hd_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

void hd_buf_reset(struct hd_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int grow(struct hd_buf *b, size_t need)
{
    size_t cap;
    char *p;

    if (b->oom)
        return -ENOMEM;
    if (b->len + need + 1 <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + need + 1) {
        if (cap > ((size_t)-1) / 2)
            goto fail;
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (!p)
        goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    b->oom = 1;
    return -ENOMEM;
}

int hd_buf_append(struct hd_buf *b, const void *data, size_t len)
{
    if (grow(b, len) < 0)
        return -ENOMEM;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int hd_buf_puts(struct hd_buf *b, const char *s)
{
    return hd_buf_append(b, s, strlen(s));
}

int hd_buf_vprintf(struct hd_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -EINVAL;
    if (grow(b, (size_t)n) < 0)
        return -ENOMEM;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int hd_buf_printf(struct hd_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = hd_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *hd_buf_steal(struct hd_buf *b, size_t *len)
{
    char *p = b->data;

    if (len)
        *len = b->len;
    if (!p)
        p = calloc(1, 1);
    memset(b, 0, sizeof(*b));
    return p;
}
