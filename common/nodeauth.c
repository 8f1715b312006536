#include "common/nodeauth.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/rand.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/kdf.h"
#include "common/tls.h"

#define NA_MAGIC 0x6e617531u /* "nau1" */
#define STRIPES 16
#define GENS 3
#define KEY_LABEL "hoard node key"

/* One generation of remembered nonces: an open-addressing set of 64-bit digests (0 = free). */
struct nset {
    uint64_t *slot;
    size_t cap, n;
};

struct stripe {
    pthread_mutex_t mu;
    int64_t gen;           /* the generation number (date / skew) of set[0] */
    struct nset set[GENS]; /* [0] current, [1] and [2] older */
};

struct key_entry {
    char id[HD_NODEAUTH_ID_MAX + 1];
    int sidx;          /* which secret */
    struct hd_hmac *h; /* keyed with the node's key; lives as long as the cache */
};

struct hd_nodeauth {
    uint32_t magic;
    char *secret;                       /* "new,old": the copy secrets[] point into */
    size_t slen;                        /* 0: no secret (dev mode) */
    char *secrets[HD_NODEAUTH_SECRETS]; /* [0] signs; all are accepted */
    size_t nsecrets;
    char self[HD_NODEAUTH_ID_MAX + 1];
    struct hd_hmac *self_h;       /* our signing key (secrets[0]) */
    uint64_t seed;                /* of the nonce digests: an attacker cannot aim at collisions */
    uint64_t nonce_base;          /* random per process start: nonces never repeat across */
    _Atomic uint64_t nonce_count; /* ... starts, and within one a counter is enough */

    pthread_rwlock_t klock; /* the key cache */
    struct key_entry *keys;
    size_t nkeys, capkeys;

    struct stripe st[STRIPES];
    size_t nonces; /* across stripes, approximately (updated under each stripe's lock) */
};

static const char AUTH_HDRS[][24] = {"x-hoard-node", "x-hoard-date", "x-hoard-nonce",
                                     "x-hoard-content-sha256", "x-hoard-signature"};

int hd_nodeauth_new(const char *secret, const char *self, struct hd_nodeauth **out)
{
    struct hd_nodeauth *na;
    int i;

    *out = NULL;
    if (!secret || !self || strlen(self) > HD_NODEAUTH_ID_MAX)
        return -EINVAL;
    na = calloc(1, sizeof(*na));
    if (!na || !(na->secret = strdup(secret))) {
        free(na);
        return -ENOMEM;
    }
    na->magic = NA_MAGIC;
    snprintf(na->self, sizeof(na->self), "%s", self);
    {
        char *save = NULL, *t;
        for (t = strtok_r(na->secret, ",", &save); t && na->nsecrets < HD_NODEAUTH_SECRETS;
             t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ' || *t == '\t')
                t++;
            if (*t)
                na->secrets[na->nsecrets++] = t;
        }
    }
    na->slen = na->nsecrets ? strlen(na->secrets[0]) : 0;
    if (na->slen) {
        unsigned char key[HD_KDF_KEY_LEN];
        int bad = hd_kdf_key(na->secrets[0], na->slen, KEY_LABEL, self, key) < 0 ||
                  !(na->self_h = hd_hmac_new(key, sizeof(key)));
        memset(key, 0, sizeof(key));
        if (bad) {
            free(na->secret);
            free(na);
            return -EIO;
        }
    }
    if (RAND_bytes((unsigned char *)&na->nonce_base, sizeof(na->nonce_base)) != 1)
        na->nonce_base = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (RAND_bytes((unsigned char *)&na->seed, sizeof(na->seed)) != 1)
        na->seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
    pthread_rwlock_init(&na->klock, NULL);
    for (i = 0; i < STRIPES; i++)
        pthread_mutex_init(&na->st[i].mu, NULL);
    *out = na;
    return 0;
}

void hd_nodeauth_free(struct hd_nodeauth *na)
{
    int i, g;

    if (!na || na->magic != NA_MAGIC)
        return;
    for (i = 0; i < STRIPES; i++) {
        for (g = 0; g < GENS; g++)
            free(na->st[i].set[g].slot);
        pthread_mutex_destroy(&na->st[i].mu);
    }
    pthread_rwlock_destroy(&na->klock);
    for (i = 0; (size_t)i < na->nkeys; i++)
        hd_hmac_free(na->keys[i].h);
    free(na->keys);
    hd_hmac_free(na->self_h);
    if (na->secret) /* strtok_r cut it into pieces: clear each */
        for (i = 0; (size_t)i < na->nsecrets; i++)
            memset(na->secrets[i], 0, strlen(na->secrets[i]));
    free(na->secret);
    memset(na, 0, sizeof(*na));
    free(na);
}

int hd_nodeauth_on(const struct hd_nodeauth *na)
{
    return na && na->slen > 0;
}

const char *hd_nodeauth_self(const struct hd_nodeauth *na)
{
    return na ? na->self : "";
}

void hd_nodeauth_sha256_hex(const void *body, size_t len, char hex[65])
{
    unsigned char d[32];

    hd_sha256(body ? body : (const void *)"", len, d);
    hd_hex(d, sizeof(d), hex);
}

int hd_nodeauth_sha256_fd(int fd, uint64_t off, uint64_t len, char hex[65])
{
    unsigned char d[32], *buf;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int dl = 0;
    ssize_t n;

    buf = malloc(256 * 1024);
    if (!buf || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        free(buf);
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    while (len > 0) {
        n = pread(fd, buf, len < 256 * 1024 ? (size_t)len : 256 * 1024, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? -errno : -EIO;
            free(buf);
            EVP_MD_CTX_free(ctx);
            return e;
        }
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    free(buf);
    EVP_DigestFinal_ex(ctx, d, &dl);
    EVP_MD_CTX_free(ctx);
    hd_hex(d, sizeof(d), hex);
    return 0;
}

/* ---- keys ---- */

/* The keyed HMAC of node id under secret sidx: cached for nodes of the map (cache = 1:
 * borrowed, *own = NULL), made afresh for others (*own set: free it after use). NULL on
 * failure. */
static const struct hd_hmac *node_mac(struct hd_nodeauth *na, int sidx, const char *id, int cache,
                                      struct hd_hmac **own)
{
    unsigned char key[HD_KDF_KEY_LEN];
    struct key_entry *e;
    struct hd_hmac *h;
    size_t i;

    *own = NULL;
    if (sidx == 0 && strcmp(id, na->self) == 0)
        return na->self_h;
    pthread_rwlock_rdlock(&na->klock);
    for (i = 0; i < na->nkeys; i++)
        if (na->keys[i].sidx == sidx && strcmp(na->keys[i].id, id) == 0) {
            h = na->keys[i].h;
            pthread_rwlock_unlock(&na->klock);
            return h;
        }
    pthread_rwlock_unlock(&na->klock);
    if (hd_kdf_key(na->secrets[sidx], strlen(na->secrets[sidx]), KEY_LABEL, id, key) < 0)
        return NULL;
    h = hd_hmac_new(key, sizeof(key));
    memset(key, 0, sizeof(key));
    if (!h)
        return NULL;
    if (!cache) {
        *own = h;
        return h;
    }
    pthread_rwlock_wrlock(&na->klock);
    for (i = 0; i < na->nkeys; i++) /* another thread was quicker */
        if (na->keys[i].sidx == sidx && strcmp(na->keys[i].id, id) == 0) {
            hd_hmac_free(h);
            h = na->keys[i].h;
            pthread_rwlock_unlock(&na->klock);
            return h;
        }
    if (na->nkeys == na->capkeys && na->capkeys < 4096) {
        size_t cap = na->capkeys ? na->capkeys * 2 : 16;
        e = realloc(na->keys, cap * sizeof(*e));
        if (e) {
            na->keys = e;
            na->capkeys = cap;
        }
    }
    if (na->nkeys < na->capkeys) {
        e = &na->keys[na->nkeys++];
        snprintf(e->id, sizeof(e->id), "%s", id);
        e->sidx = sidx;
        e->h = h;
    } else {
        *own = h; /* the cache is full: used once */
    }
    pthread_rwlock_unlock(&na->klock);
    return h;
}

/* ---- the string to sign ---- */

/* The request target of url: what follows scheme://authority, or url itself. */
static const char *request_target(const char *url)
{
    const char *p = strstr(url, "://");

    if (!p)
        return url;
    p = strchr(p + 3, '/');
    return p ? p : "/";
}

static int is_auth_header(const char *k)
{
    size_t i;

    for (i = 0; i < sizeof(AUTH_HDRS) / sizeof(AUTH_HDRS[0]); i++)
        if (strcasecmp(k, AUTH_HDRS[i]) == 0)
            return 1;
    return 0;
}

struct line {
    char *s;
};

static int line_cmp(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->s, ((const struct line *)b)->s);
}

/* Appends "name:value\n" for each X-Hoard-* header that is not one of the five auth headers,
 * names lowercased, values trimmed, sorted. */
static int signed_headers(struct hd_buf *b, const struct hd_kv *h, size_t n)
{
    struct line *ls;
    size_t i, k = 0, j;
    int rc = 0;

    if (!n)
        return 0;
    ls = calloc(n, sizeof(*ls));
    if (!ls)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        const char *v = h[i].v ? h[i].v : "";
        size_t vl;
        if (strncasecmp(h[i].k, "x-hoard-", 8) != 0 || is_auth_header(h[i].k))
            continue;
        while (*v == ' ' || *v == '\t')
            v++;
        vl = strlen(v);
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
            vl--;
        if (asprintf(&ls[k].s, "%s:%.*s\n", h[i].k, (int)vl, v) < 0) {
            rc = -ENOMEM;
            break;
        }
        for (j = 0; ls[k].s[j] != ':'; j++)
            ls[k].s[j] = (char)tolower((unsigned char)ls[k].s[j]);
        k++;
    }
    if (rc == 0) {
        qsort(ls, k, sizeof(*ls), line_cmp);
        for (i = 0; i < k; i++)
            hd_buf_append(b, ls[i].s, strlen(ls[i].s));
    }
    for (i = 0; i < k; i++)
        free(ls[i].s);
    free(ls);
    return rc;
}

static int mac(const struct hd_hmac *key, const char *method, const char *target, const char *date,
               const char *nonce, const char *sha, const char *from, const char *to,
               const struct hd_kv *h, size_t nh, char out[65])
{
    struct hd_buf b;
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "HOARD1-HMAC-SHA256\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", method, target, date,
                  nonce, sha, from, to);
    rc = signed_headers(&b, h, nh);
    if (rc == 0 && b.oom)
        rc = -ENOMEM;
    if (rc == 0)
        rc = hd_hmac_hex(key, b.data, b.len, out);
    hd_buf_cleanup(&b);
    return rc;
}

int hd_nodeauth_sign(struct hd_nodeauth *na, const char *method, const char *url, const char *to,
                     const char *body_sha256, const struct hd_kv *hdrs, size_t nhdrs,
                     struct hd_nodesig *out)
{
    unsigned char rnd[16];
    uint64_t c;
    int rc, i;

    memset(out, 0, sizeof(*out));
    out->kv[0] = (struct hd_kv){"X-Hoard-Node", na->self};
    if (!hd_nodeauth_on(na)) {
        out->n = 1;
        return 0;
    }
    /* unique, not secret (the MAC is what cannot be forged): a random base per start and a
     * counter, so signing takes no lock and no trip to the random generator */
    c = atomic_fetch_add(&na->nonce_count, 1);
    for (i = 0; i < 8; i++) {
        rnd[i] = (unsigned char)(na->nonce_base >> (8 * i));
        rnd[8 + i] = (unsigned char)(c >> (8 * i));
    }
    hd_hex(rnd, sizeof(rnd), out->nonce);
    snprintf(out->date, sizeof(out->date), "%lld", (long long)time(NULL));
    snprintf(out->sha, sizeof(out->sha), "%s", body_sha256 ? body_sha256 : HD_NODEAUTH_UNSIGNED);
    rc = mac(na->self_h, method, request_target(url), out->date, out->nonce, out->sha, na->self,
             to ? to : HD_NODEAUTH_ANY, hdrs, nhdrs, out->sig);
    if (rc < 0)
        return rc;
    out->kv[1] = (struct hd_kv){"X-Hoard-Date", out->date};
    out->kv[2] = (struct hd_kv){"X-Hoard-Nonce", out->nonce};
    out->kv[3] = (struct hd_kv){"X-Hoard-Content-Sha256", out->sha};
    out->kv[4] = (struct hd_kv){"X-Hoard-Signature", out->sig};
    out->n = 5;
    return 0;
}

/* ---- the replay cache ---- */

static int nset_has(const struct nset *s, uint64_t d)
{
    size_t i;

    if (!s->cap)
        return 0;
    for (i = d & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
        if (s->slot[i] == d)
            return 1;
    return 0;
}

static int nset_add(struct nset *s, uint64_t d)
{
    size_t i;

    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024, j;
        uint64_t *n = calloc(cap, sizeof(*n));
        if (!n)
            return -ENOMEM;
        for (j = 0; j < s->cap; j++)
            if (s->slot[j]) {
                for (i = s->slot[j] & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
                    ;
                n[i] = s->slot[j];
            }
        free(s->slot);
        s->slot = n;
        s->cap = cap;
    }
    for (i = d & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
        ;
    s->slot[i] = d;
    s->n++;
    return 0;
}

/* Moves st forward to generation g (freeing what falls out). */
static void stripe_rotate(struct hd_nodeauth *na, struct stripe *st, int64_t g)
{
    int64_t steps = g - st->gen;
    int k;

    if (steps <= 0)
        return;
    for (k = 0; k < GENS && k < steps; k++) {
        struct nset *old = &st->set[GENS - 1];
        __atomic_sub_fetch(&na->nonces, old->n, __ATOMIC_RELAXED);
        free(old->slot);
        memmove(&st->set[1], &st->set[0], (GENS - 1) * sizeof(st->set[0]));
        memset(&st->set[0], 0, sizeof(st->set[0]));
    }
    st->gen = g;
}

/* 0: first sighting (remembered); HD_EACCESS: seen before; HD_EUNAVAIL: cache full. */
static int nonce_check(struct hd_nodeauth *na, const char *sender, const char *nonce)
{
    uint64_t d = XXH3_64bits_withSeed(nonce, strlen(nonce), na->seed);
    struct stripe *st;
    int g, rc = 0;

    d ^= XXH3_64bits_withSeed(sender, strlen(sender), na->seed ^ 0x5bd1e995u);
    if (!d)
        d = 1;
    st = &na->st[d % STRIPES];
    pthread_mutex_lock(&st->mu);
    stripe_rotate(na, st, (int64_t)time(NULL) / HD_NODEAUTH_SKEW_S);
    for (g = 0; g < GENS; g++)
        if (nset_has(&st->set[g], d))
            rc = HD_EACCESS;
    if (!rc && __atomic_load_n(&na->nonces, __ATOMIC_RELAXED) >= HD_NODEAUTH_MAX_NONCES)
        rc = HD_EUNAVAIL;
    if (!rc) {
        rc = nset_add(&st->set[0], d) < 0 ? HD_EUNAVAIL : 0;
        if (!rc)
            __atomic_add_fetch(&na->nonces, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- verification ---- */

static int all_hex(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

static int valid_id(const char *s)
{
    size_t n = strlen(s), i;

    if (n == 0 || n > HD_NODEAUTH_ID_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return 0;
    return 1;
}

int hd_nodeauth_verify(struct hd_nodeauth *na, struct hd_req *r, int flags,
                       int (*known)(void *arg, const char *id), void *arg,
                       struct hd_nodeauth_who *who, const char **why)
{
    const char *node = hd_req_header(r, "X-Hoard-Node");
    const char *date = hd_req_header(r, "X-Hoard-Date");
    const char *nonce = hd_req_header(r, "X-Hoard-Nonce");
    const char *sha = hd_req_header(r, "X-Hoard-Content-Sha256");
    const char *sig = hd_req_header(r, "X-Hoard-Signature");
    const char *to = NULL;
    const struct hd_hmac *key;
    struct hd_hmac *own;
    char want[65];
    int64_t t, now = (int64_t)time(NULL);
    int is_known, rc, i;

    memset(who, 0, sizeof(*who));
    *why = NULL;
    if ((sig || node) && hd_tls_client_auth() && hd_tls_peer_ok(r->conn, why) != 1) {
        /* mutual TLS: a node call comes with a certificate of the cluster's CA */
        static _Thread_local char msg[256];
        snprintf(msg, sizeof(msg),
                 "Node calls need a client certificate signed by the cluster's CA "
                 "(tls.client_auth): %s.",
                 *why ? *why : "plain http");
        *why = msg;
        return HD_EACCESS;
    }
    if (!hd_nodeauth_on(na)) { /* dev mode: a node says who it is */
        if (!node)
            return HD_DECLINED;
        snprintf(who->sender, sizeof(who->sender), "%s", node);
        snprintf(r->principal, sizeof(r->principal), "node %s (unchecked)", node);
        return 0;
    }
    if (!sig)
        return HD_DECLINED;
    if (!node || !date || !nonce || !sha) {
        *why = "The node signature is incomplete (X-Hoard-Node, -Date, -Nonce, "
               "-Content-Sha256 and -Signature are all needed).";
        return HD_EACCESS;
    }
    for (i = 0; i < 5; i++) /* one value each: a second one must not change the meaning */
        if (hd_req_header_count(r, AUTH_HDRS[i]) != 1) {
            *why = "A node signature header appears twice.";
            return HD_EACCESS;
        }
    if (!valid_id(node) || hd_parse_i64(date, &t) < 0 || strlen(nonce) != 32 ||
        !all_hex(nonce, 32) || strlen(sig) != 64 || !all_hex(sig, 64) ||
        (strcmp(sha, HD_NODEAUTH_UNSIGNED) != 0 && (strlen(sha) != 64 || !all_hex(sha, 64)))) {
        *why = "The node signature headers are malformed.";
        return HD_EACCESS;
    }
    if (t < now - HD_NODEAUTH_SKEW_S || t > now + HD_NODEAUTH_SKEW_S) {
        *why = "The node signature's date is outside the allowed clock skew (check NTP).";
        return HD_EACCESS;
    }
    is_known = known && known(arg, node);
    if (!is_known && !(flags & HD_NA_UNKNOWN)) {
        *why = "The request is signed by a node that is not in this node's cluster map.";
        return HD_EACCESS;
    }
    /* signed for us, or (a join) for anyone; with any of our secrets (a rotation) */
    for (i = 0; !to && (size_t)i < na->nsecrets; i++) {
        if (!(key = node_mac(na, i, node, is_known, &own)))
            continue;
        if (mac(key, r->method, r->raw_uri, date, nonce, sha, node, na->self, r->hdrs, r->nhdrs,
                want) == 0 &&
            hd_kdf_equal(want, sig))
            to = na->self;
        else if ((flags & HD_NA_ANY_TO) &&
                 mac(key, r->method, r->raw_uri, date, nonce, sha, node, HD_NODEAUTH_ANY, r->hdrs,
                     r->nhdrs, want) == 0 &&
                 hd_kdf_equal(want, sig))
            to = HD_NODEAUTH_ANY;
        hd_hmac_free(own);
    }
    if (!to) {
        *why = "The node signature does not match (wrong key, or the request was changed).";
        return HD_EACCESS;
    }
    /* only after the MAC: forged requests cannot fill the cache */
    rc = nonce_check(na, node, nonce);
    if (rc == HD_EACCESS) {
        *why = "The node request was seen before (replay).";
        return HD_EACCESS;
    }
    if (rc < 0) {
        *why = "Too many node requests in the replay window; retry shortly.";
        return HD_EUNAVAIL;
    }
    if (strcmp(sha, HD_NODEAUTH_UNSIGNED) != 0) {
        int has_body = r->content_length > 0 || hd_req_header(r, "Transfer-Encoding");
        char empty[65];
        hd_nodeauth_sha256_hex("", 0, empty);
        if (!has_body && strcmp(sha, empty) != 0) {
            *why = "The body does not match X-Hoard-Content-Sha256.";
            return HD_EACCESS;
        }
        if (has_body)
            snprintf(r->body_sha256, sizeof(r->body_sha256), "%s", sha);
    }
    snprintf(who->sender, sizeof(who->sender), "%s", node);
    snprintf(r->principal, sizeof(r->principal), "node %s", node);
    who->any_recipient = to != na->self;
    return 0;
}

/* ---- responses ---- */

static int resp_mac(const struct hd_hmac *key, const char *nonce, long status, const void *body,
                    size_t len, const char *from, char out[65])
{
    char sha[65], msg[256];
    int n;

    hd_nodeauth_sha256_hex(body, len, sha);
    n = snprintf(msg, sizeof(msg), "HOARD1-RESP\n%s\n%ld\n%s\n%s", nonce, status, sha, from);
    if (n < 0 || (size_t)n >= sizeof(msg))
        return -EINVAL;
    return hd_hmac_hex(key, msg, (size_t)n, out);
}

int hd_nodeauth_resp_sign(struct hd_nodeauth *na, struct hd_req *r, int status, const void *body,
                          size_t len)
{
    const char *nonce = hd_req_header(r, "X-Hoard-Nonce");
    char sig[65];

    if (!hd_nodeauth_on(na) || !nonce || strlen(nonce) > 64)
        return 0;
    if (resp_mac(na->self_h, nonce, status, body, len, na->self, sig) < 0)
        return HD_EACCESS;
    if (hd_resp_header(r, "X-Hoard-Node", na->self) < 0 ||
        hd_resp_header(r, "X-Hoard-Signature", sig) < 0)
        return -ENOMEM;
    return 0;
}

static int sign_answer(void *arg, struct hd_req *r, int status, const void *body, size_t len)
{
    int rc = hd_nodeauth_resp_sign(arg, r, status, body, len);

    return rc == -ENOMEM ? rc : 0;
}

void hd_nodeauth_sign_answers(struct hd_nodeauth *na, struct hd_req *r)
{
    if (!hd_nodeauth_on(na))
        return;
    r->resp_sign = sign_answer;
    r->resp_sign_arg = na;
}

int hd_nodeauth_resp_verify(struct hd_nodeauth *na, const char *from, const char *nonce,
                            long status, const void *body, size_t len, const char *got_sig)
{
    const struct hd_hmac *key;
    struct hd_hmac *own;
    char want[65];
    int ok = 0, i;

    if (!hd_nodeauth_on(na))
        return 0;
    if (!from || !nonce || !got_sig || !valid_id(from))
        return HD_EACCESS;
    for (i = 0; !ok && (size_t)i < na->nsecrets; i++) {
        key = node_mac(na, i, from, 1, &own);
        ok = key && resp_mac(key, nonce, status, body, len, from, want) == 0 &&
             hd_kdf_equal(want, got_sig);
        hd_hmac_free(own);
    }
    return ok ? 0 : HD_EACCESS;
}

/* ---- curl header lists, header lines ---- */

struct curl_slist *hd_nodeauth_sign_curl(struct hd_nodeauth *na, struct curl_slist *h,
                                         const char *method, const char *url, const char *to,
                                         const char *body_sha256)
{
    struct hd_kv *kv = NULL;
    char **own = NULL, line[160];
    struct hd_nodesig sig;
    struct curl_slist *l, *n;
    size_t cnt = 0, k = 0, i;
    int rc = -ENOMEM;

    for (l = h; l; l = l->next)
        cnt++;
    if (cnt && (!(kv = calloc(cnt, sizeof(*kv))) || !(own = calloc(cnt, sizeof(*own)))))
        goto out;
    for (l = h; l; l = l->next) { /* only X-Hoard-* lines matter to the signature */
        char *c = strchr(l->data, ':');
        if (!c || strncasecmp(l->data, "x-hoard-", 8) != 0)
            continue;
        if (!(own[k] = strndup(l->data, (size_t)(c - l->data))))
            goto out;
        kv[k].k = own[k];
        kv[k].v = c + 1;
        k++;
    }
    if ((rc = hd_nodeauth_sign(na, method, url, to, body_sha256, kv, k, &sig)) < 0)
        goto out;
    for (i = 0; i < sig.n; i++) {
        snprintf(line, sizeof(line), "%s: %s", sig.kv[i].k, sig.kv[i].v);
        if (!(n = curl_slist_append(h, line))) {
            rc = -ENOMEM;
            goto out;
        }
        h = n;
    }
    rc = 0;
out:
    for (i = 0; own && i < k; i++)
        free(own[i]);
    free(own);
    free(kv);
    if (rc < 0) {
        curl_slist_free_all(h);
        return NULL;
    }
    return h;
}

int hd_nodeauth_sign_lines(struct hd_nodeauth *na, const char *method, const char *url,
                           const char *to, const char *body_sha256, char ***lines, size_t *n)
{
    struct hd_nodesig sig;
    char **v;
    size_t i;
    int rc;

    *lines = NULL;
    *n = 0;
    if ((rc = hd_nodeauth_sign(na, method, url, to, body_sha256, NULL, 0, &sig)) < 0)
        return rc;
    if (!(v = calloc(sig.n, sizeof(*v))))
        return -ENOMEM;
    for (i = 0; i < sig.n; i++)
        if (asprintf(&v[i], "%s: %s", sig.kv[i].k, sig.kv[i].v) < 0) {
            while (i--)
                free(v[i]);
            free(v);
            return -ENOMEM;
        }
    *lines = v;
    *n = sig.n;
    return 0;
}

/* ---- the redirect capability ---- */

int hd_nodeauth_psig_query(const char *q, struct hd_buf *out)
{
    int first = 1;

    while (q && *q) {
        size_t n = strcspn(q, "&"), k = strcspn(q, "=&");
        int drop = (k == 3 && strncmp(q, "pid", 3) == 0) ||
                   (k == 5 && strncmp(q, "ptime", 5) == 0) ||
                   (k == 4 && strncmp(q, "psig", 4) == 0) || (k == 3 && strncmp(q, "psv", 3) == 0);
        if (n && !drop) {
            if (!first)
                hd_buf_append(out, "&", 1);
            hd_buf_append(out, q, n);
            first = 0;
        }
        q += n;
        if (*q == '&')
            q++;
    }
    return out->oom ? -ENOMEM : 0;
}

static int psig_mac(const struct hd_hmac *key, const char *method, const char *raw_path,
                    const char *query, long long ptime, const char *to, const char *copy_src,
                    const char *smapv, char out[65])
{
    struct hd_buf b, q;
    int rc;

    hd_buf_init(&b);
    hd_buf_printf(&b, "HOARD1-PSIG\n%s\n%s\n%lld\n%s", method, raw_path, ptime, to);
    if (copy_src && *copy_src) /* what a CopyObject reads, authorised by the proxy */
        hd_buf_printf(&b, "\ncopy-source:%s", copy_src);
    if (smapv && *smapv) /* the map the proxy routed by: the target waits to hold it */
        hd_buf_printf(&b, "\nsmap:%s", smapv);
    hd_buf_init(&q); /* the call the proxy authorised, subresources and all */
    if (hd_nodeauth_psig_query(query, &q) == 0 && q.len)
        hd_buf_printf(&b, "\nquery:%.*s", (int)q.len, q.data);
    if (q.oom)
        b.oom = 1;
    hd_buf_cleanup(&q);
    if (b.oom) {
        hd_buf_cleanup(&b);
        return -ENOMEM;
    }
    rc = hd_hmac_hex(key, b.data, b.len, out);
    hd_buf_cleanup(&b);
    return rc;
}

int hd_nodeauth_psig(struct hd_nodeauth *na, const char *method, const char *raw_path,
                     const char *query, long long ptime, const char *to, const char *copy_src,
                     const char *smapv, char out[65])
{
    out[0] = '\0';
    if (!hd_nodeauth_on(na))
        return 0;
    return psig_mac(na->self_h, method, raw_path, query, ptime, to, copy_src, smapv, out);
}

int hd_nodeauth_psig_check(struct hd_nodeauth *na, const char *pid, const char *method,
                           const char *raw_path, const char *query, long long ptime,
                           const char *copy_src, const char *smapv, const char *sig)
{
    const struct hd_hmac *key;
    struct hd_hmac *own;
    char want[65];
    int ok = 0, i;

    if (!hd_nodeauth_on(na))
        return 0;
    if (!pid || !sig || !valid_id(pid))
        return HD_EACCESS;
    for (i = 0; !ok && (size_t)i < na->nsecrets; i++) {
        key = node_mac(na, i, pid, 1, &own);
        ok = key &&
             psig_mac(key, method, raw_path, query, ptime, na->self, copy_src, smapv, want) == 0 &&
             hd_kdf_equal(want, sig);
        hd_hmac_free(own);
    }
    if (!ok)
        return HD_EACCESS;
    return ptime < (long long)time(NULL) ? HD_EEXPIRED : 0;
}
