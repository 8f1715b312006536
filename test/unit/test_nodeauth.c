/* nodeauth: a signed request verifies once, for its recipient only, and fails when any signed
 * part changes; the string to sign is the documented one; the redirect capability and the
 * answer signatures bind what they say. Requests are hd_req structs filled by hand (no
 * server): headers, method, raw URI. */
#include "test/unit/hd_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>

#include "common/errors.h"
#include "common/kdf.h"
#include "common/nodeauth.h"

#define SECRET "test-secret-please-change-0123456789"

struct fake {
    struct hd_req r;
    struct hd_kv h[16];
    char uri[256];
};

/* r as a receiver sees METHOD uri with the signature's headers plus extra ones. */
static void fake_req(struct fake *f, const char *method, const char *uri,
                     const struct hd_nodesig *sig, const struct hd_kv *extra, size_t nextra)
{
    size_t i;

    memset(f, 0, sizeof(*f));
    snprintf(f->uri, sizeof(f->uri), "%s", uri);
    f->r.method = method;
    f->r.raw_uri = f->uri;
    f->r.content_length = -1;
    for (i = 0; i < sig->n; i++)
        f->h[f->r.nhdrs++] = sig->kv[i];
    for (i = 0; i < nextra; i++)
        f->h[f->r.nhdrs++] = extra[i];
    f->r.hdrs = f->h;
}

static const char *known_set;

static int known(void *arg, const char *id)
{
    (void)arg;
    return known_set && strstr(known_set, id) != NULL;
}

static int verify(struct hd_nodeauth *na, struct fake *f, int flags, struct hd_nodeauth_who *who)
{
    const char *why;
    return hd_nodeauth_verify(na, &f->r, flags, known, NULL, who, &why);
}

HD_SUITE(nodeauth_roundtrip)
{
    struct hd_nodeauth *p1, *t1, *t2;
    struct hd_nodeauth_who who;
    struct hd_nodesig sig;
    struct hd_kv vh = {"X-Hoard-Vhost", "bucket"};
    struct fake f;

    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "p1", &p1), 0);
    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "t1", &t1), 0);
    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "t2", &t2), 0);
    known_set = "p1 t1 t2";

    /* a relay-style request with an X-Hoard-* header, for t1 */
    CHECK_EQ_INT(
        hd_nodeauth_sign(p1, "GET", "http://127.0.0.1:81/o/k?x=1", "t1", NULL, &vh, 1, &sig), 0);
    CHECK_EQ_INT(sig.n, 5);
    fake_req(&f, "GET", "/o/k?x=1", &sig, &vh, 1);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), 0);
    CHECK_EQ_STR(who.sender, "p1");
    CHECK_EQ_INT(who.any_recipient, 0);
    /* the same bytes again: a replay */
    fake_req(&f, "GET", "/o/k?x=1", &sig, &vh, 1);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);

    /* each change fails (fresh signatures, so the nonce is not what fails) */
    CHECK_EQ_INT(
        hd_nodeauth_sign(p1, "GET", "http://127.0.0.1:81/o/k?x=1", "t1", NULL, &vh, 1, &sig), 0);
    fake_req(&f, "GET", "/o/k?x=1", &sig, &vh, 1);
    CHECK_EQ_INT(verify(t2, &f, 0, &who), HD_EACCESS); /* another recipient */
    fake_req(&f, "GET", "/o/k?x=2", &sig, &vh, 1);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS); /* another query */
    fake_req(&f, "PUT", "/o/k?x=1", &sig, &vh, 1);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS); /* another method */
    {
        struct hd_kv other = {"X-Hoard-Vhost", "other"};
        fake_req(&f, "GET", "/o/k?x=1", &sig, &other, 1);
        CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS); /* another X-Hoard header value */
    }
    {
        struct hd_kv more[2] = {{"X-Hoard-Vhost", "bucket"}, {"X-Hoard-Local", "1"}};
        fake_req(&f, "GET", "/o/k?x=1", &sig, more, 2);
        CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS); /* an X-Hoard header added */
    }
    {
        /* other headers are not signed */
        struct hd_kv two[2] = {{"X-Hoard-Vhost", "bucket"}, {"Content-Type", "x/y"}};
        fake_req(&f, "GET", "/o/k?x=1", &sig, two, 2);
        CHECK_EQ_INT(verify(t1, &f, 0, &who), 0);
    }
    /* another sender's name on the same signature */
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "GET", "/o/k", "t1", NULL, NULL, 0, &sig), 0);
    sig.kv[0].v = "t2";
    fake_req(&f, "GET", "/o/k", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
    /* an unknown sender, even with a valid signature */
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "GET", "/o/k", "t1", NULL, NULL, 0, &sig), 0);
    known_set = "t1 t2";
    fake_req(&f, "GET", "/o/k", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
    fake_req(&f, "GET", "/o/k", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, HD_NA_UNKNOWN, &who), 0); /* a join's rule */
    known_set = "p1 t1 t2";
    /* for anyone: only where the receiver allows it */
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "POST", "/v1/cluster/join", NULL, NULL, NULL, 0, &sig), 0);
    fake_req(&f, "POST", "/v1/cluster/join", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
    fake_req(&f, "POST", "/v1/cluster/join", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, HD_NA_ANY_TO, &who), 0);
    CHECK_EQ_INT(who.any_recipient, 1);
    /* no signature at all */
    memset(&sig, 0, sizeof(sig));
    fake_req(&f, "GET", "/o/k", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_DECLINED);

    hd_nodeauth_free(p1);
    hd_nodeauth_free(t1);
    hd_nodeauth_free(t2);
}

HD_SUITE(nodeauth_time_and_form)
{
    struct hd_nodeauth *p1, *t1;
    struct hd_nodeauth_who who;
    struct hd_nodesig sig;
    struct fake f;
    char date[32], want[65], str[512];
    unsigned char key[32];

    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "p1", &p1), 0);
    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "t1", &t1), 0);
    known_set = "p1 t1";
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "PUT", "http://h:1/v1/metasync", "t1",
                                  HD_NODEAUTH_EMPTY_SHA256, NULL, 0, &sig),
                 0);
    /* the string to sign, as docs/security.md writes it */
    snprintf(str, sizeof(str), "HOARD1-HMAC-SHA256\nPUT\n/v1/metasync\n%s\n%s\n%s\np1\nt1\n",
             sig.date, sig.nonce, HD_NODEAUTH_EMPTY_SHA256);
    CHECK_EQ_INT(hd_kdf_key(SECRET, strlen(SECRET), "hoard node key", "p1", key), 0);
    hd_kdf_hmac_hex(key, 32, str, strlen(str), want);
    CHECK_EQ_STR(sig.sig, want);
    CHECK_EQ_INT(strlen(sig.nonce), 32);

    /* a date out of the window, re-signed so only the date is wrong */
    snprintf(date, sizeof(date), "%lld", (long long)time(NULL) - HD_NODEAUTH_SKEW_S - 5);
    snprintf(str, sizeof(str), "HOARD1-HMAC-SHA256\nPUT\n/v1/metasync\n%s\n%s\n%s\np1\nt1\n", date,
             sig.nonce, HD_NODEAUTH_EMPTY_SHA256);
    hd_kdf_hmac_hex(key, 32, str, strlen(str), want);
    sig.kv[1].v = date;
    sig.kv[4].v = want;
    fake_req(&f, "PUT", "/v1/metasync", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);

    /* the body hash: none sent but a non-empty one signed */
    {
        char sha[65];
        hd_nodeauth_sha256_hex("{\"smap\":{}}", 11, sha);
        CHECK_EQ_STR(sha, "24393384713835e17fcbeb243e447c982160eb8958410b50750595d967ebb705");
        CHECK_EQ_INT(hd_nodeauth_sign(p1, "PUT", "/v1/metasync", "t1", sha, NULL, 0, &sig), 0);
        fake_req(&f, "PUT", "/v1/metasync", &sig, NULL, 0);
        f.r.content_length = 0;
        CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
        CHECK_EQ_INT(hd_nodeauth_sign(p1, "PUT", "/v1/metasync", "t1", sha, NULL, 0, &sig), 0);
        fake_req(&f, "PUT", "/v1/metasync", &sig, NULL, 0);
        f.r.content_length = 11; /* with a body: the HTTP layer checks it (r->body_sha256) */
        CHECK_EQ_INT(verify(t1, &f, 0, &who), 0);
        CHECK_EQ_STR(f.r.body_sha256, sha);
    }
    /* malformed parts */
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "GET", "/x", "t1", NULL, NULL, 0, &sig), 0);
    sig.kv[2].v = "zz";
    fake_req(&f, "GET", "/x", &sig, NULL, 0);
    CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "GET", "/x", "t1", NULL, NULL, 0, &sig), 0);
    {
        struct hd_kv dup = {"X-Hoard-Node", "p1"}; /* twice */
        fake_req(&f, "GET", "/x", &sig, &dup, 1);
        CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
    }
    hd_nodeauth_free(p1);
    hd_nodeauth_free(t1);
}

HD_SUITE(nodeauth_psig_answers_dev)
{
    struct hd_nodeauth *p1, *t1, *t2, *dev;
    struct hd_nodeauth_who who;
    struct hd_nodesig sig;
    struct fake f;
    char ps[65];
    long long later = (long long)time(NULL) + 300;
    size_t i;

    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "p1", &p1), 0);
    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "t1", &t1), 0);
    CHECK_EQ_INT(hd_nodeauth_new(SECRET, "t2", &t2), 0);
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/v1/objects/b/o", NULL, later, "t1", NULL, NULL, ps),
                 0);
    CHECK_EQ_INT(
        hd_nodeauth_psig_check(t1, "p1", "GET", "/v1/objects/b/o", NULL, later, NULL, NULL, ps), 0);
    CHECK_EQ_INT(
        hd_nodeauth_psig_check(t1, "p1", "GET", "/v1/objects/b/o", NULL, later, NULL, NULL, ps), 0);
    CHECK(hd_nodeauth_psig_check(t2, "p1", "GET", "/v1/objects/b/o", NULL, later, NULL, NULL, ps) <
          0);
    CHECK(hd_nodeauth_psig_check(t1, "p2", "GET", "/v1/objects/b/o", NULL, later, NULL, NULL, ps) <
          0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "PUT", "/v1/objects/b/o", NULL, later, NULL, NULL, ps) <
          0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/v1/objects/b/x", NULL, later, NULL, NULL, ps) <
          0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/v1/objects/b/o", NULL, later + 1, NULL, NULL,
                                 ps) < 0);
    /* a copy source is bound: none may be added to, changed in or dropped from a PUT's 307 */
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "PUT", "/b/o", NULL, later, "t1", NULL, NULL, ps), 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "PUT", "/b/o", NULL, later, "", NULL, ps), 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "PUT", "/b/o", NULL, later, "/secret/o", NULL, ps) < 0);
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "PUT", "/b/o", NULL, later, "t1", "/b/src", NULL, ps), 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "PUT", "/b/o", NULL, later, "/b/src", NULL, ps),
                 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "PUT", "/b/o", NULL, later, "/secret/o", NULL, ps) < 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "PUT", "/b/o", NULL, later, NULL, NULL, ps) < 0);
    /* the map version the proxy routed by (psv) is bound in: a client cannot raise it */
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/b/o", NULL, later, "t1", NULL, "1.7", ps), 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", NULL, later, NULL, "1.7", ps), 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", NULL, later, NULL, "1.8", ps) < 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", NULL, later, NULL, NULL, ps) < 0);
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/b/o", NULL, later, "t1", NULL, NULL, ps), 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", NULL, later, NULL, "1.7", ps) < 0);
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/o", NULL, 1000, "t1", NULL, NULL, ps), 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "GET", "/o", NULL, 1000, NULL, NULL, ps),
                 HD_EEXPIRED);

    /* the query is bound (what the Location carries, pid/ptime/psig/psv and empty parameters
     * aside): no subresource or response-* override can be added to a capability */
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/b/o", "partNumber=2", later, "t1", NULL, NULL, ps),
                 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o",
                                        "partNumber=2&pid=p1&ptime=9&psig=ab", later, NULL, NULL,
                                        ps),
                 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "&partNumber=2&psv=1.2&", later,
                                        NULL, NULL, ps),
                 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "tagging&partNumber=2", later, NULL, NULL,
                                 ps) < 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "partNumber=2&acl", later, NULL, NULL,
                                 ps) < 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "partNumber=3", later, NULL, NULL, ps) <
          0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", NULL, later, NULL, NULL, ps) < 0);
    CHECK_EQ_INT(hd_nodeauth_psig(p1, "GET", "/b/o", "", later, "t1", NULL, NULL, ps), 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "pid=p1&ptime=1&psig=x", later,
                                        NULL, NULL, ps),
                 0);
    CHECK(hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", "response-content-type=text/html", later,
                                 NULL, NULL, ps) < 0);

    /* an answer signature binds the request's nonce, the status and the body */
    CHECK_EQ_INT(hd_nodeauth_sign(p1, "POST", "/v1/cluster/vote", "t1", NULL, NULL, 0, &sig), 0);
    fake_req(&f, "POST", "/v1/cluster/vote", &sig, NULL, 0);
    CHECK_EQ_INT(hd_nodeauth_resp_sign(t1, &f.r, 200, "yes", 3), 0);
    {
        const char *got = NULL;
        for (i = 0; i < f.r.nrh; i++)
            if (strcmp(f.r.rh[i].k, "X-Hoard-Signature") == 0)
                got = f.r.rh[i].v;
        CHECK(got != NULL);
        CHECK_EQ_INT(hd_nodeauth_resp_verify(p1, "t1", sig.nonce, 200, "yes", 3, got), 0);
        CHECK(hd_nodeauth_resp_verify(p1, "t1", sig.nonce, 200, "no!", 3, got) < 0);
        CHECK(hd_nodeauth_resp_verify(p1, "t1", sig.nonce, 409, "yes", 3, got) < 0);
        CHECK(hd_nodeauth_resp_verify(p1, "t2", sig.nonce, 200, "yes", 3, got) < 0);
        CHECK(hd_nodeauth_resp_verify(p1, "t1", "00000000000000000000000000000000", 200, "yes", 3,
                                      got) < 0);
        CHECK(hd_nodeauth_resp_verify(p1, "t1", sig.nonce, 200, "yes", 3, NULL) < 0);
    }
    for (i = 0; i < f.r.nrh; i++) {
        free((char *)f.r.rh[i].k);
        free((char *)f.r.rh[i].v);
    }
    free(f.r.rh);

    /* dev mode (no secret): only the sender's name; no checks */
    CHECK_EQ_INT(hd_nodeauth_new("", "t9", &dev), 0);
    CHECK(!hd_nodeauth_on(dev));
    CHECK_EQ_INT(hd_nodeauth_sign(dev, "GET", "/x", "t1", NULL, NULL, 0, &sig), 0);
    CHECK_EQ_INT(sig.n, 1);
    fake_req(&f, "GET", "/x", &sig, NULL, 0);
    known_set = NULL;
    CHECK_EQ_INT(verify(dev, &f, 0, &who), 0);
    CHECK_EQ_STR(who.sender, "t9");

    /* a curl header list: its X-Hoard-* lines are signed */
    {
        struct curl_slist *h = curl_slist_append(NULL, "X-Hoard-Local: 1");
        struct curl_slist *l;
        struct hd_kv kv[8];
        size_t n = 0;
        char *lines[8];
        h = curl_slist_append(h, "Content-Type: a/b");
        h = hd_nodeauth_sign_curl(p1, h, "GET", "http://h:1/x", "t1", NULL);
        CHECK(h != NULL);
        memset(&f, 0, sizeof(f));
        f.r.method = "GET";
        snprintf(f.uri, sizeof(f.uri), "/x");
        f.r.raw_uri = f.uri;
        f.r.content_length = -1;
        for (l = h; l && n < 8; l = l->next) {
            char *c;
            lines[n] = strdup(l->data);
            c = strchr(lines[n], ':');
            *c = '\0';
            kv[n].k = lines[n];
            kv[n].v = c + 2;
            n++;
        }
        f.r.hdrs = kv;
        f.r.nhdrs = n;
        known_set = "p1 t1";
        CHECK_EQ_INT(n, 7);
        kv[0].v = "0"; /* X-Hoard-Local changed: refused before the nonce is remembered */
        CHECK_EQ_INT(verify(t1, &f, 0, &who), HD_EACCESS);
        kv[0].v = "1";
        CHECK_EQ_INT(verify(t1, &f, 0, &who), 0);
        for (i = 0; i < n; i++)
            free(lines[i]);
        curl_slist_free_all(h);
    }
    hd_nodeauth_free(dev);
    hd_nodeauth_free(p1);
    hd_nodeauth_free(t1);
    hd_nodeauth_free(t2);
}

/* A secret rotation: the first secret of a list signs, any verifies. */
HD_SUITE(nodeauth_rotation)
{
    struct hd_nodeauth *old_only, *both_old_first, *both_new_first, *new_only;
    struct hd_nodeauth_who who;
    struct hd_nodesig sig;
    struct fake f;
    char ps[65];

    CHECK_EQ_INT(hd_nodeauth_new("old-secret", "p1", &old_only), 0);
    CHECK_EQ_INT(hd_nodeauth_new("old-secret, new-secret", "t1", &both_old_first), 0);
    CHECK_EQ_INT(hd_nodeauth_new("new-secret,old-secret", "t1", &both_new_first), 0);
    CHECK_EQ_INT(hd_nodeauth_new("new-secret", "t1", &new_only), 0);
    known_set = "p1 t1";
    /* step 1: every node accepts both, still signing with the old one */
    CHECK_EQ_INT(hd_nodeauth_sign(old_only, "GET", "/x", "t1", NULL, NULL, 0, &sig), 0);
    fake_req(&f, "GET", "/x", &sig, NULL, 0);
    CHECK_EQ_INT(verify(both_old_first, &f, 0, &who), 0);
    /* step 2: signing with the new one, accepted by nodes that accept both */
    CHECK_EQ_INT(hd_nodeauth_sign(both_new_first, "GET", "/y", "t1", NULL, NULL, 0, &sig), 0);
    sig.kv[0].v = "t1"; /* from t1 to t1: keys are per sender */
    fake_req(&f, "GET", "/y", &sig, NULL, 0);
    CHECK_EQ_INT(verify(both_old_first, &f, 0, &who), 0);
    /* ... but not by a node that knows only the old one */
    CHECK_EQ_INT(hd_nodeauth_sign(new_only, "GET", "/z", "p1", NULL, NULL, 0, &sig), 0);
    fake_req(&f, "GET", "/z", &sig, NULL, 0);
    CHECK_EQ_INT(verify(old_only, &f, 0, &who), HD_EACCESS);
    /* redirect capabilities follow the same rule */
    CHECK_EQ_INT(hd_nodeauth_psig(old_only, "GET", "/o", NULL, 4102444800LL, "t1", NULL, NULL, ps),
                 0);
    CHECK_EQ_INT(hd_nodeauth_psig_check(both_new_first, "p1", "GET", "/o", NULL, 4102444800LL, NULL,
                                        NULL, ps),
                 0);
    CHECK(hd_nodeauth_psig_check(new_only, "p1", "GET", "/o", NULL, 4102444800LL, NULL, NULL, ps) <
          0);
    hd_nodeauth_free(old_only);
    hd_nodeauth_free(both_old_first);
    hd_nodeauth_free(both_new_first);
    hd_nodeauth_free(new_only);
}
