/* Unit tests for common/buf: growth across many KiB by append and printf, NUL termination,
 * binary data, reset, steal, and the sticky oom flag. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "test/unit/hd_test.h"

HD_SUITE(buf)
{
    struct hd_buf b;
    char *p, *big;
    size_t n, i;
    int ok;

    hd_buf_init(&b);
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.oom, 0);

    /* Steal from an empty buffer: an empty heap string, never NULL. */
    n = 99;
    p = hd_buf_steal(&b, &n);
    CHECK(p != NULL);
    CHECK_EQ_INT(n, 0);
    CHECK(p && p[0] == '\0');
    free(p);

    /* Empty appends still leave a valid C string. */
    CHECK_EQ_INT(hd_buf_append(&b, NULL, 0), 0);
    CHECK(b.data != NULL && b.data[0] == '\0');
    CHECK_EQ_INT(hd_buf_printf(&b, "%s", ""), 0);
    CHECK_EQ_INT(b.len, 0);
    CHECK(b.data[0] == '\0');

    /* Append 200 KiB in odd-sized chunks; the content and NUL terminator hold throughout. */
    big = malloc(200 * 1024);
    CHECK(big != NULL);
    if (!big)
        return;
    for (i = 0; i < 200 * 1024; i++)
        big[i] = (char)('a' + (i * 7) % 26);
    ok = 1;
    for (i = 0; i < 200 * 1024;) {
        size_t k = 1 + (i * 13) % 977;
        if (k > 200 * 1024 - i)
            k = 200 * 1024 - i;
        if (hd_buf_append(&b, big + i, k) != 0)
            ok = 0;
        i += k;
        if (b.len != i || b.data[b.len] != '\0' || b.cap <= b.len)
            ok = 0;
    }
    CHECK(ok);
    CHECK_EQ_INT(b.len, 200 * 1024);
    CHECK(memcmp(b.data, big, 200 * 1024) == 0);
    CHECK_EQ_INT(strlen(b.data), 200 * 1024);

    /* Reset keeps the allocation and empties the string. */
    {
        size_t cap = b.cap;
        hd_buf_reset(&b);
        CHECK_EQ_INT(b.len, 0);
        CHECK(b.data != NULL && b.data[0] == '\0');
        CHECK_EQ_INT(b.cap, cap);
    }

    /* printf growth: many small formatted pieces, compared with a reference. */
    {
        size_t rl = 0, rcap = 1 << 20;
        char *ref = malloc(rcap);
        CHECK(ref != NULL);
        ok = 1;
        for (i = 0; ref && i < 20000; i++) {
            int w = snprintf(ref + rl, rcap - rl, "<k%zu v=\"%d\"/>%s", i, (int)(i * 37) - 5000,
                             i % 100 == 0 ? "\n" : "");
            rl += (size_t)w;
            if (hd_buf_printf(&b, "<k%zu v=\"%d\"/>%s", i, (int)(i * 37) - 5000,
                              i % 100 == 0 ? "\n" : "") != 0)
                ok = 0;
        }
        CHECK(ok);
        CHECK(rl > 200 * 1024);
        CHECK_EQ_INT(b.len, rl);
        CHECK(ref && memcmp(b.data, ref, rl) == 0);
        CHECK(b.data[b.len] == '\0');
        free(ref);
    }

    /* One printf far larger than the current capacity. */
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_buf_puts(&b, "head:"), 0);
    big[100 * 1024] = '\0';
    CHECK_EQ_INT(hd_buf_printf(&b, "[%s]%d", big, 42), 0);
    CHECK_EQ_INT(b.len, 5 + 1 + 100 * 1024 + 1 + 2);
    CHECK(strncmp(b.data, "head:[", 6) == 0);
    CHECK(memcmp(b.data + 6, big, 100 * 1024) == 0);
    CHECK_EQ_STR(b.data + 6 + 100 * 1024, "]42");

    /* vprintf via printf with %% and a literal-only format. */
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_buf_printf(&b, "100%% %s", "sure"), 0);
    CHECK_EQ_STR(b.data, "100% sure");

    /* Binary data with embedded NULs: len counts them, a NUL follows the end. */
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_buf_append(&b, "a\0b\0c", 5), 0);
    CHECK_EQ_INT(b.len, 5);
    CHECK(memcmp(b.data, "a\0b\0c", 5) == 0);
    CHECK(b.data[5] == '\0');

    /* Steal hands over the data and leaves an empty, reusable buffer. */
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_buf_puts(&b, "hello, "), 0);
    CHECK_EQ_INT(hd_buf_printf(&b, "%s %d", "world", 7), 0);
    p = hd_buf_steal(&b, &n);
    CHECK_EQ_STR(p, "hello, world 7");
    CHECK_EQ_INT(n, 14);
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.cap, 0);
    free(p);
    p = hd_buf_steal(&b, NULL); /* len may be NULL */
    CHECK(p && p[0] == '\0');
    free(p);
    CHECK_EQ_INT(hd_buf_puts(&b, "again"), 0);
    CHECK_EQ_STR(b.data, "again");

    /* The oom flag is sticky: every later write fails and changes nothing. */
    b.oom = 1;
    CHECK_EQ_INT(hd_buf_append(&b, "x", 1), -ENOMEM);
    CHECK_EQ_INT(hd_buf_puts(&b, "y"), -ENOMEM);
    CHECK_EQ_INT(hd_buf_printf(&b, "%d", 1), -ENOMEM);
    CHECK_EQ_INT(b.len, 5);
    CHECK_EQ_STR(b.data, "again");

    /* Cleanup frees and zeroes; cleanup twice is harmless. */
    hd_buf_cleanup(&b);
    CHECK(b.data == NULL);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(b.oom, 0);
    hd_buf_cleanup(&b);
    free(big);
}
