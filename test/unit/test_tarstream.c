/* Unit tests for common/tarstream (the ordered tar writer, with local sources here; remote
 * fetches are covered by the integration tests), common/batch's body parser and common/ring. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/ring.h"
#include "common/tarindex.h"
#include "common/tarstream.h"
#include "test/unit/hd_test.h"

HD_SUITE(ring_wraps)
{
    struct hd_ring g;
    char out[64];

    CHECK_EQ_INT(hd_ring_init(&g, 8, 8), 0);
    CHECK_EQ_INT(hd_ring_put(&g, "abcdef", 6), 6);
    CHECK_EQ_INT(hd_ring_get(&g, out, 4), 4);
    CHECK(memcmp(out, "abcd", 4) == 0);
    CHECK_EQ_INT(hd_ring_put(&g, "ghijklmn", 8), 6); /* wraps; 2 do not fit */
    CHECK_EQ_INT(hd_ring_get(&g, out, sizeof(out)), 8);
    CHECK(memcmp(out, "efghijkl", 8) == 0);
    CHECK_EQ_INT(hd_ring_get(&g, out, sizeof(out)), 0);
    hd_ring_cleanup(&g);

    /* growing: from 4 up to 16 by doubling, keeping wrapped data in order */
    CHECK_EQ_INT(hd_ring_init(&g, 4, 16), 0);
    CHECK_EQ_INT(hd_ring_put(&g, "abc", 3), 3);
    CHECK_EQ_INT(hd_ring_get(&g, out, 2), 2);
    CHECK_EQ_INT(hd_ring_put(&g, "defghij", 7), 7); /* wraps: grows to 8 */
    CHECK_EQ_INT(g.cap, 8);
    CHECK_EQ_INT(hd_ring_put(&g, "0123456789", 10), 8); /* grows to the maximum, 16 */
    CHECK_EQ_INT(g.cap, 16);
    CHECK_EQ_INT(hd_ring_get(&g, out, sizeof(out)), 16);
    CHECK(memcmp(out, "cdefghij01234567", 16) == 0);
    hd_ring_cleanup(&g);

    /* room: grows for what is asked, never past the maximum, copies nothing */
    CHECK_EQ_INT(hd_ring_init(&g, 4, 16), 0);
    CHECK_EQ_INT(hd_ring_put(&g, "abc", 3), 3);
    CHECK_EQ_INT(hd_ring_room(&g, 1), 1);
    CHECK_EQ_INT(g.cap, 4);
    CHECK_EQ_INT(hd_ring_room(&g, 6), 13); /* doubles twice: 16 - 3 */
    CHECK_EQ_INT(g.cap, 16);
    CHECK_EQ_INT(hd_ring_room(&g, 20), 13); /* at the maximum: less than asked */
    CHECK_EQ_INT(hd_ring_get(&g, out, sizeof(out)), 3);
    CHECK(memcmp(out, "abc", 3) == 0);
    hd_ring_cleanup(&g);
}

HD_SUITE(batch_parse)
{
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"", "not a JSON object"},
        {"[1]", "not a JSON object"},
        {"{\"entries\": []}", "1 to 100000"},
        {"{\"entries\": [{\"name\": \"x\"}]}", "no valid bucket"},
        {"{\"bucket\": \"Bad_Name\", \"entries\": [{\"name\": \"x\"}]}", "no valid bucket"},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": \"\"}]}", "\"name\""},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": 5}]}", "\"name\""},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": \"x\", \"archpath\": \"\"}]}", "archpath"},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": \"x\", \"zz\": 1}]}", "unknown field"},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": \"x\"}], \"more\": 1}", "unknown field"},
        {"{\"bucket\": \"bkt\", \"entries\": [{\"name\": \"x\"}], \"continue_on_error\": 1}",
         "continue_on_error"},
        {"{\"bucket\": \"bkt\", \"entries\": [\"x\"]}", "not an object"},
        {"{\"bucket\": \"bkt\", \"bucket\": \"b2\", \"entries\": [{\"name\": \"x\"}]}",
         "not a JSON object"},
        {NULL, NULL}};
    const char *good = "{\"bucket\": \"bkt\", \"continue_on_error\": true, \"entries\": ["
                       "{\"name\": \"a/b.jpg\"}, {\"bucket\": \"other\", \"name\": \"s.tar\", "
                       "\"archpath\": \"m/1.cls\", \"as\": \"x\"}]}";
    struct hd_batch *b;
    char msg[256];
    size_t i;

    CHECK_EQ_INT(hd_batch_parse(good, strlen(good), &b, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(b->n, 2);
    CHECK(b->continue_on_error);
    CHECK_EQ_STR(b->e[0].bucket, "bkt");
    CHECK_EQ_STR(b->e[0].name, "a/b.jpg");
    CHECK(b->e[0].archpath == NULL && b->e[0].as == NULL);
    CHECK_EQ_STR(b->e[1].bucket, "other");
    CHECK_EQ_STR(b->e[1].archpath, "m/1.cls");
    CHECK_EQ_STR(b->e[1].as, "x");
    hd_batch_free(b);
    for (i = 0; bad[i].body; i++) {
        msg[0] = '\0';
        b = NULL;
        CHECK_EQ_INT(hd_batch_parse(bad[i].body, strlen(bad[i].body), &b, msg, sizeof(msg)),
                     HD_EBADARG);
        CHECK(b == NULL);
        if (!strstr(msg, bad[i].why))
            fprintf(stderr, "  body %s: message '%s' lacks '%s'\n", bad[i].body, msg, bad[i].why);
        CHECK(strstr(msg, bad[i].why) != NULL);
    }
}

/* ---- tarstream with local files ---- */

struct ts {
    int fds[4];
    const char *names[4];
    int fail[4]; /* resolve fails with this code */
    struct hd_buf out;
    int sink_fail_after; /* bytes; 0 = never */
    int stop_at;         /* entry index to stop before; -1 = never */
    int keep_going;
    size_t written;
    size_t failures;
    int local_mode; /* ts_local: 0 take the range (read it into out here), 1 decline, < 0 fail */
    size_t taken;
};

static void ts_resolve(void *ctx, size_t i, struct hd_tar_src *src)
{
    struct ts *t = ctx;

    if (t->fail[i]) {
        src->err = t->fail[i];
        snprintf(src->msg, sizeof(src->msg), "entry %zu is missing", i);
        return;
    }
    src->fd = dup(t->fds[i]);
    src->off = 3; /* a range of the file: skip "hdr" */
    src->len = (uint64_t)lseek(t->fds[i], 0, SEEK_END) - 3;
    src->mtime = 1700000000;
}

static const char *ts_name(void *ctx, size_t i)
{
    return ((struct ts *)ctx)->names[i];
}

static int ts_sink(void *ctx, const void *p, size_t n)
{
    struct ts *t = ctx;

    if (t->sink_fail_after && t->out.len + n > (size_t)t->sink_fail_after)
        return -EPIPE;
    return hd_buf_append(&t->out, p, n);
}

static int ts_failed(void *ctx, size_t i, int code, const char *msg)
{
    struct ts *t = ctx;

    t->failures++;
    return t->keep_going ? 0 : code;
}

static void ts_written(void *ctx, size_t i, uint64_t bytes)
{
    ((struct ts *)ctx)->written++;
}

static int ts_stopped(void *ctx)
{
    struct ts *t = ctx;

    return t->stop_at >= 0 && (int)t->written >= t->stop_at;
}

/* The owner of a handed-over range inserts its bytes where the sink's output stands now,
 * as batch GET's HTTP worker does. */
static int ts_local(void *ctx, size_t i, int fd, uint64_t off, uint64_t len)
{
    struct ts *t = ctx;
    char buf[4096];
    uint64_t done = 0;

    if (t->local_mode)
        return t->local_mode;
    while (done < len) {
        ssize_t n = pread(fd, buf, len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf),
                          (off_t)(off + done));
        if (n <= 0)
            break;
        hd_buf_append(&t->out, buf, (size_t)n);
        done += (uint64_t)n;
    }
    close(fd);
    t->taken++;
    return 0;
}

struct members {
    char names[8][64];
    uint64_t off[8], size[8];
    size_t n;
};

static int collect(void *arg, const struct hd_tar_member *m)
{
    struct members *ms = arg;

    if (ms->n < 8) {
        snprintf(ms->names[ms->n], sizeof(ms->names[0]), "%s", m->name);
        ms->off[ms->n] = m->off;
        ms->size[ms->n] = m->size;
        ms->n++;
    }
    return 0;
}

static int tmpfile_with(const char *data, size_t n)
{
    char path[] = "/tmp/hd-tarstream-XXXXXX";
    int fd = mkstemp(path);

    if (fd >= 0) {
        unlink(path);
        if (write(fd, data, n) != (ssize_t)n) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

HD_SUITE(tarstream_local)
{
    static const struct hd_tarstream_ops ops = {.resolve = ts_resolve,
                                                .name = ts_name,
                                                .sink = ts_sink,
                                                .failed = ts_failed,
                                                .written = ts_written,
                                                .stopped = ts_stopped};
    struct hd_tarstream_cfg cfg = {3, 2, 4096, 0};
    struct ts t;
    struct members ms;
    char *big = malloc(300000), msg[256];
    size_t i;

    memset(&t, 0, sizeof(t));
    memcpy(big, "hdr", 3);
    for (i = 3; i < 300000; i++)
        big[i] = (char)(i * 31);
    t.fds[0] = tmpfile_with("hdrfirst", 8);
    t.fds[1] = tmpfile_with(big, 300000);
    t.fds[2] = tmpfile_with("hdr", 3); /* an empty range */
    t.names[0] = "s/0001.cls";
    t.names[1] = "s/0001.jpg";
    t.names[2] = "s/0002.txt";
    t.stop_at = -1;
    hd_buf_init(&t.out);
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(t.written, 3);
    memset(&ms, 0, sizeof(ms));
    CHECK_EQ_INT(hd_tarindex_mem(t.out.data, t.out.len, collect, &ms, NULL, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(ms.n, 3);
    CHECK_EQ_STR(ms.names[1], "s/0001.jpg");
    CHECK_EQ_INT(ms.size[1], 299997);
    CHECK(memcmp(t.out.data + ms.off[0], "first", 5) == 0);
    CHECK(memcmp(t.out.data + ms.off[1], big + 3, 299997) == 0);
    CHECK_EQ_INT(ms.size[2], 0);

    /* local data handed over by reference (ops->local): the same bytes, whoever reads the
     * files; declined: written as before; a failure stops the run */
    {
        struct hd_tarstream_ops lops = ops;
        struct hd_buf want = t.out;
        lops.local = ts_local;
        hd_buf_init(&t.out);
        CHECK_EQ_INT(hd_tarstream_run(&cfg, &lops, &t, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(t.taken, 3);
        CHECK_EQ_INT(t.out.len, want.len);
        CHECK(t.out.len == want.len && memcmp(t.out.data, want.data, want.len) == 0);
        t.local_mode = 1;
        hd_buf_reset(&t.out);
        CHECK_EQ_INT(hd_tarstream_run(&cfg, &lops, &t, msg, sizeof(msg)), 0);
        CHECK(t.out.len == want.len && memcmp(t.out.data, want.data, want.len) == 0);
        t.local_mode = -EPIPE;
        CHECK_EQ_INT(hd_tarstream_run(&cfg, &lops, &t, msg, sizeof(msg)), -EPIPE);
        t.local_mode = 0;
        hd_buf_cleanup(&t.out);
        t.out = want;
    }

    /* a failed entry: recorded as __404__/NAME with the message, or the run stops */
    hd_buf_reset(&t.out);
    t.written = 0;
    t.fail[1] = HD_ENOSUCHKEY;
    t.keep_going = 1;
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), 0);
    memset(&ms, 0, sizeof(ms));
    CHECK_EQ_INT(hd_tarindex_mem(t.out.data, t.out.len, collect, &ms, NULL, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(ms.n, 3);
    CHECK_EQ_STR(ms.names[1], "__404__/s/0001.jpg");
    CHECK(memcmp(t.out.data + ms.off[1], "entry 1 is missing", ms.size[1]) == 0);
    t.fail[1] = HD_EUNAVAIL;
    hd_buf_reset(&t.out);
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), 0);
    CHECK(memmem(t.out.data, t.out.len, "__error__/s/0001.jpg", 20) != NULL);
    t.keep_going = 0;
    hd_buf_reset(&t.out);
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), HD_EUNAVAIL);
    CHECK(strstr(msg, "s/0001.jpg") != NULL && strstr(msg, "entry 1 is missing") != NULL);
    t.fail[1] = 0;

    /* the sink fails: the run stops with its code; a stop request: -ECANCELED */
    hd_buf_reset(&t.out);
    t.sink_fail_after = 10000;
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), -EPIPE);
    t.sink_fail_after = 0;
    hd_buf_reset(&t.out);
    t.written = 0;
    t.stop_at = 1;
    CHECK_EQ_INT(hd_tarstream_run(&cfg, &ops, &t, msg, sizeof(msg)), -ECANCELED);
    for (i = 0; i < 3; i++)
        close(t.fds[i]);
    hd_buf_cleanup(&t.out);
    free(big);
}
