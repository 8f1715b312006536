/* Unit tests for common/brace: ranges (padding, steps, descending), lists, products,
 * literals, and malformed templates. */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/brace.h"
#include "test/unit/hd_test.h"

static char *at(struct hd_brace *t, uint64_t i)
{
    struct hd_buf b;

    hd_buf_init(&b);
    if (hd_brace_at(t, i, &b) < 0) {
        hd_buf_cleanup(&b);
        return NULL;
    }
    return hd_buf_steal(&b, NULL);
}

#define CHECK_AT(t, i, want)                                                                       \
    do {                                                                                           \
        char *s_ = at(t, i);                                                                       \
        CHECK_EQ_STR(s_, want);                                                                    \
        free(s_);                                                                                  \
    } while (0)

HD_SUITE(brace)
{
    struct hd_brace *t = NULL;
    struct hd_buf b;
    char err[128];

    CHECK_EQ_INT(hd_brace_parse("shard-{0000..0999}.tar", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_brace_count(t), 1000);
    CHECK_AT(t, 0, "shard-0000.tar");
    CHECK_AT(t, 7, "shard-0007.tar");
    CHECK_AT(t, 999, "shard-0999.tar");
    hd_buf_init(&b);
    CHECK_EQ_INT(hd_brace_at(t, 1000, &b), HD_EBADARG);
    hd_buf_cleanup(&b);
    hd_brace_free(t);

    CHECK_EQ_INT(hd_brace_parse("img-{0..98..2}.jpg", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_brace_count(t), 50);
    CHECK_AT(t, 1, "img-2.jpg");
    CHECK_AT(t, 49, "img-98.jpg");
    hd_brace_free(t);

    CHECK_EQ_INT(hd_brace_parse("{10..8}", &t, err, sizeof(err)), 0); /* descending */
    CHECK_EQ_INT(hd_brace_count(t), 3);
    CHECK_AT(t, 0, "10");
    CHECK_AT(t, 2, "8");
    hd_brace_free(t);

    CHECK_EQ_INT(hd_brace_parse("{train,val}/p-{00..02}", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_brace_count(t), 6);
    CHECK_AT(t, 0, "train/p-00");
    CHECK_AT(t, 2, "train/p-02");
    CHECK_AT(t, 3, "val/p-00");
    CHECK_AT(t, 5, "val/p-02");
    hd_brace_free(t);

    CHECK_EQ_INT(hd_brace_parse("{1..10}", &t, err, sizeof(err)), 0); /* no leading zero */
    CHECK_AT(t, 0, "1");
    CHECK_AT(t, 9, "10");
    hd_brace_free(t);

    CHECK_EQ_INT(hd_brace_parse("plain.txt", &t, err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_brace_count(t), 1);
    CHECK_AT(t, 0, "plain.txt");
    hd_brace_free(t);

    /* malformed */
    t = NULL;
    CHECK_EQ_INT(hd_brace_parse("a{1..", &t, err, sizeof(err)), HD_EBADARG);
    CHECK(t == NULL && strstr(err, "brace"));
    CHECK_EQ_INT(hd_brace_parse("a}b", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{a..b}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{1..5..0}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{{1..2}}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{x}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("", &t, err, sizeof(err)), HD_EBADARG);
    CHECK_EQ_INT(hd_brace_parse("{0..99999}{0..99999}", &t, err, sizeof(err)), HD_EBADARG);
    CHECK(strstr(err, "too many"));
    CHECK_EQ_INT(hd_brace_parse("{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}{0..1}", &t, err,
                                sizeof(err)),
                 HD_EBADARG);
    CHECK(t == NULL);
}
