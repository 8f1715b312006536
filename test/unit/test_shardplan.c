/* Unit tests for common/shardplan: sample keys, name templates, and plans (grouping that never
 * splits a sample even when names of other samples sort between its files, the packing rule,
 * the seeded shuffle with a fixed vector, digests, too few names). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/shardplan.h"
#include "test/unit/hd_test.h"

static size_t key(const char *n, enum hd_keyrule r)
{
    return hd_sample_key(n, r);
}

HD_SUITE(shardplan_keys)
{
    enum hd_keyrule r;

    CHECK_EQ_INT(key("a/0001.jpg", HD_KEY_FIRST_DOT), 6);
    CHECK_EQ_INT(key("a/0001.seg.png", HD_KEY_FIRST_DOT), 6);
    CHECK_EQ_INT(key("a.b/0001.seg.png", HD_KEY_FIRST_DOT), 8); /* dots of directories count not */
    CHECK_EQ_INT(key("a/0001.seg.png", HD_KEY_LAST_DOT), 10);
    CHECK_EQ_INT(key("a/noext", HD_KEY_FIRST_DOT), 7);
    CHECK_EQ_INT(key("a/b/c.jpg", HD_KEY_DIR), 3);
    CHECK_EQ_INT(key("top.jpg", HD_KEY_DIR), 7);
    CHECK_EQ_INT(key("a/0001.jpg", HD_KEY_NAME), 10);
    CHECK_EQ_INT(hd_keyrule_parse("last_dot", &r), 0);
    CHECK_EQ_INT(r, HD_KEY_LAST_DOT);
    CHECK_EQ_INT(hd_keyrule_parse("second_dot", &r), HD_EBADARG);
    CHECK_EQ_STR(hd_keyrule_name(HD_KEY_DIR), "dir");
}

static char *tname(const struct hd_tmpl *t, uint64_t i)
{
    struct hd_buf b;

    hd_buf_init(&b);
    if (hd_tmpl_name(t, i, &b) < 0) {
        hd_buf_cleanup(&b);
        return NULL;
    }
    return hd_buf_steal(&b, NULL);
}

HD_SUITE(shardplan_templates)
{
    static const char *const bad[] = {"",
                                      "x-{}.tar",
                                      "x-{1..}}.tar",
                                      "x-{a..b}.tar",
                                      "x-{5..2}.tar",
                                      "x-{1..2}{3..4}",
                                      "x-}",
                                      "x-{1.2}.tar",
                                      "x-{123456789012345678901..}",
                                      NULL};
    struct hd_tmpl t;
    char msg[200], *n;
    size_t i;

    CHECK_EQ_INT(hd_tmpl_parse("train-{000000..}.tar", &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_tmpl_count(&t), UINT64_MAX);
    n = tname(&t, 0);
    CHECK_EQ_STR(n, "train-000000.tar");
    free(n);
    n = tname(&t, 1234567);
    CHECK_EQ_STR(n, "train-1234567.tar"); /* past the padding: wider */
    free(n);
    hd_tmpl_cleanup(&t);
    CHECK_EQ_INT(hd_tmpl_parse("s-{0010..0012}", &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_tmpl_count(&t), 3);
    n = tname(&t, 2);
    CHECK_EQ_STR(n, "s-0012");
    free(n);
    CHECK(tname(&t, 3) == NULL);
    hd_tmpl_cleanup(&t);
    CHECK_EQ_INT(hd_tmpl_parse("one.tar", &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_tmpl_count(&t), 1);
    n = tname(&t, 0);
    CHECK_EQ_STR(n, "one.tar");
    free(n);
    CHECK(tname(&t, 1) == NULL);
    hd_tmpl_cleanup(&t);
    for (i = 0; bad[i]; i++) {
        msg[0] = '\0';
        CHECK_EQ_INT(hd_tmpl_parse(bad[i], &t, msg, sizeof(msg)), HD_EBADARG);
        CHECK(msg[0] != '\0');
    }
}

struct fixture {
    struct hd_plan_obj o[32];
    size_t n;
};

static void add(struct fixture *f, const char *name, uint64_t size)
{
    f->o[f->n].name = name;
    f->o[f->n].size = size;
    f->o[f->n].etag = "e";
    f->n++;
}

/* Names of shard s's objects, space-separated. */
static void shard_names(const struct hd_plan *p, const struct fixture *f, size_t s, char *out,
                        size_t len)
{
    const struct hd_plan_shard *sh = &p->shards[s];
    size_t i, k, w = 0;

    out[0] = '\0';
    for (i = sh->first; i < sh->first + sh->n; i++) {
        const struct hd_plan_sample *sm = &p->samples[p->sorder[i]];
        for (k = sm->first; k < sm->first + sm->n; k++)
            w += (size_t)snprintf(out + w, len - w, "%s%s", w ? " " : "", f->o[p->order[k]].name);
    }
}

HD_SUITE(shardplan_grouping_and_packing)
{
    struct fixture f = {.n = 0};
    struct hd_tmpl t;
    struct hd_plan_opts o = {.shard_size = 2048, .rule = HD_KEY_FIRST_DOT, .tmpl = &t};
    struct hd_plan p;
    char msg[200], names[512];
    size_t s;

    /* "a/0001.b/x.jpg" (key a/0001.b/x) sorts between the files of sample a/0001 */
    add(&f, "a/0001.c", 100);
    add(&f, "a/0001.a", 100);
    add(&f, "a/0001.b/x.jpg", 100);
    add(&f, "a/0002.jpg", 1000);
    add(&f, "a/0002.cls", 1);
    add(&f, "a/0003.jpg", 600);
    CHECK_EQ_INT(hd_tmpl_parse("t-{0..}.tar", &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &p, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(p.nsamples, 4);
    CHECK_EQ_INT(p.nobjs, 6);
    CHECK_EQ_INT(p.bytes, 1901);
    /* samples in key order: a/0001 (a, c: 2048 tar bytes), a/0001.b/x (1024), a/0002
     * (2560), a/0003; a shard closes once it holds >= 2048 tar bytes */
    CHECK_EQ_INT(p.nshards, 3);
    shard_names(&p, &f, 0, names, sizeof(names));
    CHECK_EQ_STR(names, "a/0001.a a/0001.c");
    shard_names(&p, &f, 1, names, sizeof(names));
    CHECK_EQ_STR(names, "a/0001.b/x.jpg a/0002.cls a/0002.jpg");
    shard_names(&p, &f, 2, names, sizeof(names));
    CHECK_EQ_STR(names, "a/0003.jpg");
    CHECK_EQ_STR(p.shards[0].name, "t-0.tar");
    CHECK_EQ_STR(p.shards[2].name, "t-2.tar");
    CHECK_EQ_INT(p.shards[0].tar_size, 2048 + 1024);
    CHECK_EQ_INT(p.shards[1].tar_size, 3584 + 1024);
    CHECK_EQ_INT(p.shards[1].nobjs, 3);
    CHECK_EQ_INT(p.shards[1].bytes, 1101);
    CHECK_EQ_INT(strlen(p.shards[0].digest), 16);
    {
        char d0[17];
        snprintf(d0, sizeof(d0), "%s", p.shards[0].digest);
        hd_plan_free(&p);
        f.o[0].etag = "changed"; /* another version of a member: another digest */
        CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &p, msg, sizeof(msg)), 0);
        CHECK(strcmp(d0, p.shards[0].digest) != 0);
    }
    for (s = 0; s < p.nshards; s++)
        CHECK(p.shards[s].n > 0);
    hd_plan_free(&p);
    /* one byte per shard: every sample a shard of its own */
    o.shard_size = 1;
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &p, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(p.nshards, 4);
    hd_plan_free(&p);
    hd_tmpl_cleanup(&t);
    /* too few names in the template */
    CHECK_EQ_INT(hd_tmpl_parse("t-{0..2}.tar", &t, msg, sizeof(msg)), 0);
    msg[0] = '\0';
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &p, msg, sizeof(msg)), HD_EBADARG);
    CHECK(strstr(msg, "too few") != NULL);
    hd_tmpl_cleanup(&t);
    CHECK_EQ_INT(hd_plan_build(f.o, 0, &o, &p, msg, sizeof(msg)), HD_EBADARG);
}

HD_SUITE(shardplan_shuffle)
{
    static const char *const names[] = {"k0.x", "k1.x", "k2.x", "k3.x", "k4.x",
                                        "k5.x", "k6.x", "k7.x", "k8.x", "k9.x"};
    struct fixture f = {.n = 0};
    struct hd_tmpl t;
    struct hd_plan_opts o = {.shard_size = 1 << 20, .shuffle = 1, .seed = 42, .tmpl = &t};
    struct hd_plan p, q;
    char msg[200], a[256], b[256];
    size_t i;

    for (i = 0; i < 10; i++)
        add(&f, names[i], 10);
    CHECK_EQ_INT(hd_tmpl_parse("one.tar", &t, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &p, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &q, msg, sizeof(msg)), 0);
    shard_names(&p, &f, 0, a, sizeof(a));
    shard_names(&q, &f, 0, b, sizeof(b));
    CHECK_EQ_STR(a, b);
    /* the documented algorithm (Fisher-Yates, splitmix64), computed independently in
     * Python: fixed across versions and machines */
    CHECK_EQ_STR(a, "k0.x k9.x k5.x k8.x k6.x k4.x k7.x k2.x k1.x k3.x");
    hd_plan_free(&q);
    o.seed = 43;
    CHECK_EQ_INT(hd_plan_build(f.o, f.n, &o, &q, msg, sizeof(msg)), 0);
    shard_names(&q, &f, 0, b, sizeof(b));
    CHECK(strcmp(a, b) != 0);
    hd_plan_free(&p);
    hd_plan_free(&q);
    hd_tmpl_cleanup(&t);
}
