/* Unit tests for common/smap: JSON round trips, HRW owner over a map (DESIGN.md vectors),
 * flags and down targets, persisted state and version rules, the cluster HMACs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/policy.h"
#include "common/smap.h"
#include "test/unit/hd_test.h"

static struct hd_smap *three_targets(void)
{
    struct hd_smap *s = hd_smap_new();
    const char *ids[] = {"t3", "t1", "t2"};
    size_t i;

    for (i = 0; i < 3; i++) {
        struct hd_node n;
        memset(&n, 0, sizeof(n));
        snprintf(n.id, sizeof(n.id), "%s", ids[i]);
        n.type = HD_NODE_TARGET;
        snprintf(n.url, sizeof(n.url), "http://127.0.0.1:900%zu", i);
        CHECK_EQ_INT(hd_smap_put(s, &n), 1);
        CHECK_EQ_INT(hd_smap_put(s, &n), 0); /* identical: no change */
    }
    s->version = 7;
    snprintf(s->uuid, sizeof(s->uuid), "u1");
    snprintf(s->primary, sizeof(s->primary), "p1");
    return s;
}

static const char *owner_of(const struct hd_smap *s, const char *uname, int *rc)
{
    const struct hd_node *n = NULL;

    *rc = hd_smap_owner(s, uname, strlen(uname), &n);
    return n ? n->id : NULL;
}

HD_SUITE(smap_owner)
{
    struct hd_smap *s = three_targets(), *c = NULL;
    struct hd_node *t2;
    int rc;

    CHECK_EQ_STR(s->nodes[0].id, "t1"); /* kept sorted */
    CHECK_EQ_STR(owner_of(s, "ais/@#/demo/a.txt", &rc), "t2");
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(owner_of(s, "aws/@#/mybucket/images/dog.jpeg", &rc), "t1");
    CHECK_EQ_STR(owner_of(s, "ais/@uuid1#ns1/bck/obj", &rc), "t2");
    /* maintenance: skipped for placement */
    CHECK_EQ_INT(hd_smap_clone(s, &c), 0);
    t2 = (struct hd_node *)hd_smap_find(c, "t2");
    t2->flags = HD_NODE_MAINT;
    CHECK_EQ_STR(owner_of(c, "ais/@#/demo/a.txt", &rc), "t3"); /* next by weight */
    /* maintenance for a restart (hoardd --prestop), also once it is down: skipped, and the
     * next owner serves */
    t2->flags = HD_NODE_MAINT | HD_NODE_RESTART;
    t2->down = 1;
    CHECK_EQ_STR(owner_of(c, "ais/@#/demo/a.txt", &rc), "t3");
    CHECK_EQ_INT(rc, 0);
    t2->down = 0;
    /* down: still the owner, but unavailable */
    t2->flags = 0;
    t2->down = 1;
    CHECK(owner_of(c, "ais/@#/demo/a.txt", &rc) != NULL);
    CHECK_EQ_INT(rc, HD_EUNAVAIL);
    CHECK_EQ_INT(hd_smap_count(c, HD_NODE_TARGET, 1), 2);
    CHECK_EQ_INT(hd_smap_count(c, HD_NODE_TARGET, 0), 3);
    CHECK_EQ_INT(hd_smap_remove(c, "t2"), 0);
    CHECK_EQ_INT(hd_smap_remove(c, "t2"), -ENOENT);
    CHECK_EQ_STR(owner_of(c, "ais/@#/demo/a.txt", &rc), "t3");
    hd_smap_unref(c);
    c = hd_smap_new();
    CHECK(owner_of(c, "x", &rc) == NULL);
    CHECK_EQ_INT(rc, HD_EUNAVAIL);
    hd_smap_unref(c);
    hd_smap_unref(s);
}

HD_SUITE(smap_json)
{
    struct hd_smap *s = three_targets(), *back = NULL;
    struct hd_node n, *t;
    json_t *j, *bad;
    char *a, *b;

    memset(&n, 0, sizeof(n));
    snprintf(n.id, sizeof(n.id), "p1");
    n.type = HD_NODE_PROXY;
    snprintf(n.url, sizeof(n.url), "http://127.0.0.1:8080");
    hd_smap_put(s, &n);
    t = (struct hd_node *)hd_smap_find(s, "t3");
    t->down = 1;
    t->mountpaths = calloc(1, sizeof(char *));
    t->mountpaths[0] = strdup("/data/mp1");
    t->nmp = 1;
    ((struct hd_node *)hd_smap_find(s, "t1"))->caps = HD_NODE_CAP_SIGNED_ADMIN;
    j = hd_smap_to_json(s);
    CHECK(json_object_get(json_object_get(j, "pmap"), "p1") != NULL);
    /* capabilities travel with the node; a node without any has no field */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(json_object_get(j, "tmap"), "t1"), "hoard_caps")),
                 HD_NODE_CAP_SIGNED_ADMIN);
    CHECK(json_object_get(json_object_get(json_object_get(j, "tmap"), "t2"), "hoard_caps") == NULL);
    CHECK(json_object_get(json_object_get(j, "tmap"), "t1") != NULL);
    CHECK(json_object_get(json_object_get(j, "tmap_down"), "t3") != NULL);
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(j, "tmap"), "t1"), "public_net"),
            "direct_url")),
        "http://127.0.0.1:9001");
    CHECK_EQ_INT(hd_smap_from_json(j, &back), 0);
    a = json_dumps(j, JSON_SORT_KEYS);
    json_decref(j);
    j = hd_smap_to_json(back);
    b = json_dumps(j, JSON_SORT_KEYS);
    CHECK_EQ_STR(a, b);
    CHECK_EQ_INT(back->version, 7);
    CHECK_EQ_INT(hd_smap_find(back, "t3")->down, 1);
    CHECK_EQ_INT(hd_smap_find(back, "t1")->caps, HD_NODE_CAP_SIGNED_ADMIN);
    CHECK_EQ_INT(hd_smap_find(back, "t2")->caps, 0);
    CHECK_EQ_STR(hd_smap_find(back, "t3")->mountpaths[0], "/data/mp1");
    free(a);
    free(b);
    json_decref(j);
    hd_smap_unref(back);
    /* a tmap entry that is not a target, or without a URL, is refused */
    bad = json_loads("{\"version\":1,\"tmap\":{\"x\":{\"daemon_id\":\"x\",\"daemon_type\":"
                     "\"proxy\",\"public_net\":{\"direct_url\":\"http://a\"}}}}",
                     0, NULL);
    back = NULL;
    CHECK_EQ_INT(hd_smap_from_json(bad, &back), HD_EBADARG);
    json_decref(bad);
    bad = json_loads("{\"version\":1,\"tmap\":{\"x\":{\"daemon_id\":\"x\",\"daemon_type\":"
                     "\"target\"}}}",
                     0, NULL);
    CHECK_EQ_INT(hd_smap_from_json(bad, &back), HD_EBADARG);
    json_decref(bad);
    bad = json_loads("{\"version\":-1}", 0, NULL);
    CHECK_EQ_INT(hd_smap_from_json(bad, &back), HD_EBADARG);
    json_decref(bad);
    hd_smap_unref(s);
}

HD_SUITE(smap_bmd)
{
    struct hd_bmd *b = hd_bmd_new(), *back = NULL, *c = NULL;
    json_t *j;

    CHECK_EQ_INT(hd_bmd_put(b, "zeta", "ais", 100, NULL), 0);
    CHECK_EQ_INT(hd_bmd_put(b, "alpha", NULL, 200, "{\"anonymous_read\":true}"), 0);
    CHECK_EQ_INT(b->n, 2);
    CHECK_EQ_STR(b->b[0].name, "alpha");
    CHECK_EQ_STR(b->b[0].provider, "ais");
    b->version = 3;
    j = hd_bmd_to_json(b);
    CHECK_EQ_INT(hd_bmd_from_json(j, &back), 0);
    json_decref(j);
    CHECK_EQ_INT(back->version, 3);
    CHECK_EQ_INT(back->n, 2);
    CHECK_EQ_INT(hd_bmd_find(back, "zeta")->created, 100);
    CHECK(hd_bmd_find(back, "zeta")->props == NULL);
    CHECK(hd_bmd_props_equal(hd_bmd_find(back, "alpha")->props, "{\"anonymous_read\":true}"));
    CHECK(hd_bmd_props_equal(NULL, "{}"));
    CHECK(!hd_bmd_props_equal(NULL, "{\"anonymous_read\":true}"));
    /* what unsigned callers may do, parsed once: through JSON and clones too */
    /* (objects: 4; listings: HD_PUBLIC_LIST 1, HD_PUBLIC_LIST_MORE 2) */
#define PUB(b, n) (hd_bmd_find(b, n)->public_objects * 4 + hd_bmd_find(b, n)->public_list)
    CHECK_EQ_INT(PUB(back, "alpha"), 7); /* anonymous_read: objects and every listing */
    CHECK_EQ_INT(PUB(back, "zeta"), 0);
    CHECK_EQ_INT(hd_bmd_put(back, "zeta", "ais", 100, "{\"anonymous_list\":true,\"tags\":{}}"), 0);
    CHECK_EQ_INT(PUB(back, "zeta"), 3);
    CHECK_EQ_INT(hd_bmd_put(back, "beta", "ais", 1, "{\"anonymous_read\":false}"), 0);
    CHECK_EQ_INT(PUB(back, "beta"), 0);
    CHECK_EQ_INT(hd_bmd_put(back, "beta", "ais", 1, "not json \"anonymous_read\":true"), 0);
    CHECK_EQ_INT(PUB(back, "beta"), 0);
    /* a bucket policy: what it grants this bucket, nothing for a policy naming another */
    CHECK_EQ_INT(hd_bmd_put(back, "beta", "ais", 1,
                            "{\"policy\":\"{\\\"Statement\\\":{\\\"Effect\\\":\\\"Allow\\\","
                            "\\\"Principal\\\":\\\"*\\\",\\\"Action\\\":\\\"s3:GetObject\\\","
                            "\\\"Resource\\\":\\\"arn:aws:s3:::beta/*\\\"}}\"}"),
                 0);
    CHECK_EQ_INT(PUB(back, "beta"), 4);
    CHECK_EQ_INT(hd_bmd_put(back, "gamma", "ais", 1, hd_bmd_find(back, "beta")->props), 0);
    CHECK_EQ_INT(PUB(back, "gamma"), 0);
    /* a policy's s3:ListBucket: ListObjects, not the version and upload listings */
    CHECK_EQ_INT(hd_bmd_put(back, "gamma", "ais", 1,
                            "{\"policy\":\"{\\\"Statement\\\":{\\\"Effect\\\":\\\"Allow\\\","
                            "\\\"Principal\\\":\\\"*\\\",\\\"Action\\\":\\\"s3:ListBucket\\\","
                            "\\\"Resource\\\":\\\"arn:aws:s3:::gamma\\\"}}\"}"),
                 0);
    CHECK_EQ_INT(PUB(back, "gamma"), 1);
    /* s3:GetObject on a prefix: some objects, the prefix kept parsed (and through clones) */
    CHECK_EQ_INT(hd_bmd_put(back, "gamma", "ais", 1,
                            "{\"policy\":\"{\\\"Statement\\\":{\\\"Effect\\\":\\\"Allow\\\","
                            "\\\"Principal\\\":\\\"*\\\",\\\"Action\\\":\\\"s3:GetObject\\\","
                            "\\\"Resource\\\":\\\"arn:aws:s3:::gamma/pub/*\\\"}}\"}"),
                 0);
    CHECK_EQ_INT(PUB(back, "gamma"), 8);
    CHECK_EQ_INT(hd_policy_patterns_match(hd_bmd_find(back, "gamma")->public_keys, "pub/x"), 1);
    CHECK_EQ_INT(hd_policy_patterns_match(hd_bmd_find(back, "gamma")->public_keys, "x"), 0);
    {
        struct hd_bmd *c2 = NULL;
        CHECK_EQ_INT(hd_bmd_clone(back, &c2), 0);
        CHECK_EQ_INT(hd_policy_patterns_match(hd_bmd_find(c2, "gamma")->public_keys, "pub/y"), 1);
        hd_bmd_unref(c2);
    }
    CHECK_EQ_INT(hd_bmd_put(back, "gamma", "ais", 1, NULL), 0);
    CHECK_EQ_INT(PUB(back, "gamma"), 0);
    CHECK_EQ_INT(hd_bmd_remove(back, "gamma"), 0);
    CHECK_EQ_INT(hd_bmd_remove(back, "beta"), 0);
    CHECK_EQ_INT(hd_bmd_clone(back, &c), 0);
    CHECK_EQ_INT(PUB(c, "alpha"), 7);
    CHECK_EQ_INT(PUB(c, "zeta"), 3);
    CHECK_EQ_INT(hd_bmd_put(back, "zeta", "ais", 100, NULL), 0);
    CHECK_EQ_INT(PUB(back, "zeta"), 0);
#undef PUB
    CHECK_EQ_INT(hd_bmd_remove(c, "alpha"), 0);
    CHECK_EQ_INT(hd_bmd_remove(c, "alpha"), -ENOENT);
    CHECK(hd_bmd_find(back, "alpha") != NULL); /* the clone is separate */
    hd_bmd_unref(c);
    hd_bmd_unref(back);
    hd_bmd_unref(b);
}

HD_SUITE(smap_state)
{
    char dir[] = "/tmp/hd-smap-XXXXXX", id[HD_NODE_ID_MAX], id2[HD_NODE_ID_MAX];
    struct hd_smap_state *st = NULL;
    struct hd_smap *s = three_targets(), *got, *old = NULL;
    struct hd_bmd *b = hd_bmd_new(), *prev = NULL, *gb;
    char cmd[128];

    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ_INT(hd_smap_state_open(dir, &st), 0);
    CHECK(hd_smap_state_smap(st) == NULL);
    gb = hd_smap_state_bmd(st);
    CHECK_EQ_INT(gb->version, 0);
    hd_bmd_unref(gb);
    CHECK_EQ_INT(hd_smap_state_node_id(st, "", 't', id), 0);
    CHECK_EQ_INT(strlen(id), 9);
    CHECK_EQ_INT(id[0], 't');
    CHECK_EQ_INT(hd_smap_state_set_smap(st, s, 0), 0);
    CHECK_EQ_INT(hd_smap_state_set_smap(st, s, 0), 1); /* same version */
    CHECK_EQ_INT(hd_smap_clone(s, &old), 0);
    old->version = 3;
    CHECK_EQ_INT(hd_smap_state_set_smap(st, old, 0), -ESTALE);
    hd_bmd_put(b, "bk", "ais", 1, NULL);
    b->version = 2;
    CHECK_EQ_INT(hd_smap_state_set_bmd(st, b, 0, &prev), 0);
    CHECK(prev && prev->version == 0);
    hd_bmd_unref(prev);
    hd_smap_state_close(st);

    /* reopened: the same id, smap and BMD */
    st = NULL;
    CHECK_EQ_INT(hd_smap_state_open(dir, &st), 0);
    CHECK_EQ_INT(hd_smap_state_node_id(st, "", 't', id2), 0);
    CHECK_EQ_STR(id2, id);
    got = hd_smap_state_smap(st);
    CHECK(got && got->version == 7 && hd_smap_find(got, "t2"));
    hd_smap_unref(got);
    gb = hd_smap_state_bmd(st);
    CHECK(gb->version == 2 && hd_bmd_find(gb, "bk"));
    hd_bmd_unref(gb);
    CHECK_EQ_INT(hd_smap_state_set_smap(st, old, 1), 0); /* force (join) */
    got = hd_smap_state_smap(st);
    CHECK_EQ_INT(got->version, 3);
    hd_smap_unref(got);
    CHECK_EQ_INT(hd_smap_state_node_id(st, "bad/id", 't', id2), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_state_node_id(st, "t-fixed", 't', id2), 0);
    CHECK_EQ_STR(id2, "t-fixed");
    hd_smap_state_close(st);
    hd_smap_unref(old);
    hd_smap_unref(s);
    hd_bmd_unref(b);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

HD_SUITE(smap_find_url)
{
    struct hd_smap *s = hd_smap_new();
    struct hd_node n;

    memset(&n, 0, sizeof(n));
    snprintf(n.id, sizeof(n.id), "t1");
    snprintf(n.url, sizeof(n.url), "http://127.0.0.1:81");
    n.type = HD_NODE_TARGET;
    CHECK(hd_smap_put(s, &n) >= 0);
    snprintf(n.id, sizeof(n.id), "t2");
    snprintf(n.url, sizeof(n.url), "http://127.0.0.1:8");
    CHECK(hd_smap_put(s, &n) >= 0);
    CHECK_EQ_STR(hd_smap_find_url(s, "http://127.0.0.1:81/v1/objects/b/o")->id, "t1");
    CHECK_EQ_STR(hd_smap_find_url(s, "http://127.0.0.1:81?x=1")->id, "t1");
    CHECK_EQ_STR(hd_smap_find_url(s, "http://127.0.0.1:8/x")->id, "t2");
    CHECK(hd_smap_find_url(s, "http://127.0.0.1:811/x") == NULL); /* no prefix matches */
    CHECK(hd_smap_find_url(s, "http://10.0.0.1:81/x") == NULL);
    CHECK(hd_smap_find_url(NULL, "http://127.0.0.1:81/x") == NULL);
    hd_smap_unref(s);
}

HD_SUITE(smap_bmd_revoked)
{
    static const char id1[] = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    static const char id2[] = "0000000000000000000000000000000000000000000000000000000000000000";
    struct hd_bmd *b = hd_bmd_new(), *c = NULL, *d = NULL;
    json_t *j;

    CHECK_EQ_INT(hd_bmd_revoke(b, id1, 2000, 1000), 0);
    CHECK_EQ_INT(hd_bmd_revoke(b, id1, 2000, 1000), 0); /* once */
    CHECK_EQ_INT((int)b->nrv, 1);
    CHECK(hd_bmd_is_revoked(b, id1, 1500));
    CHECK(!hd_bmd_is_revoked(b, id1, 2000)); /* expired: nothing to refuse any more */
    CHECK(!hd_bmd_is_revoked(b, id2, 1500));
    CHECK_EQ_INT(hd_bmd_revoke(b, "not-hex", 2000, 1000), HD_EBADARG);
    CHECK_EQ_INT(hd_bmd_revoke(b, id2, 900, 1000), 0); /* already expired: not kept */
    CHECK_EQ_INT((int)b->nrv, 1);
    /* clone and the JSON round trip keep the list */
    CHECK_EQ_INT(hd_bmd_clone(b, &c), 0);
    CHECK(hd_bmd_is_revoked(c, id1, 1500));
    j = hd_bmd_to_json(c);
    CHECK(j && json_array_size(json_object_get(j, "revoked")) == 1);
    CHECK_EQ_INT(hd_bmd_from_json(j, &d), 0);
    CHECK(d && hd_bmd_is_revoked(d, id1, 1500));
    json_decref(j);
    /* a later revocation drops the expired ones */
    CHECK_EQ_INT(hd_bmd_revoke(d, id2, 5000, 3000), 0);
    CHECK_EQ_INT((int)d->nrv, 1);
    CHECK(hd_bmd_is_revoked(d, id2, 3000));
    /* malformed lists are refused */
    j = json_loads("{\"version\":1,\"revoked\":[{\"id\":\"xyz\",\"exp\":1}]}", 0, NULL);
    hd_bmd_unref(c);
    c = NULL;
    CHECK_EQ_INT(hd_bmd_from_json(j, &c), HD_EBADARG);
    json_decref(j);
    j = json_loads("{\"version\":1,\"revoked\":{}}", 0, NULL);
    CHECK_EQ_INT(hd_bmd_from_json(j, &c), HD_EBADARG);
    json_decref(j);
    hd_bmd_unref(b);
    hd_bmd_unref(d);
}

/* the version a redirect (psv) and a relay (X-Hoard-Smap) carry */
HD_SUITE(smap_vstr)
{
    struct hd_smap s = {.term = 3, .version = 41};
    char v[HD_SMAP_VSTR_MAX];
    int64_t t = -1, n = -1;

    hd_smap_vstr(&s, v);
    CHECK_EQ_STR(v, "3.41");
    CHECK_EQ_INT(hd_smap_vparse(v, &t, &n), 0);
    CHECK(t == 3 && n == 41);
    hd_smap_vstr(NULL, v);
    CHECK_EQ_STR(v, "");
    CHECK_EQ_INT(hd_smap_vparse("0.0", &t, &n), 0);
    CHECK(t == 0 && n == 0);
    CHECK_EQ_INT(hd_smap_vparse("", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse(NULL, &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("41", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse(".41", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("3.", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("3.4.1", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("-1.4", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("3.x", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("99999999999999999999999.1", &t, &n), HD_EBADARG);
    CHECK_EQ_INT(hd_smap_vparse("1.99999999999999999999", &t, &n), HD_EBADARG);
}
