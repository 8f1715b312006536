#include "common/sigv2.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httputil.h"

#define SHA1_LEN 20
#define EXPIRES_DIGITS_MAX 18 /* fits a long long with room to spare */

/* Variants of the string to sign (see the header comment). F_* bits combine. */
#define F_RAWVAL 1 /* sub-resource values as on the wire, not decoded */
#define F_NOEQ 2   /* an empty "k=" sub-resource signed as "k" */
#define F_EXT 4    /* the extra sub-resources some clients sign */
#define F_DATE 8   /* Date value kept although x-amz-date is present */
#define F_SLASH 16 /* "/bucket" signed as "/bucket/" (botocore, s3cmd; AWS's own form) */
#define F_BOTO 32  /* the first query part signed twice: "/b/k?uploads?uploads" (botocore) */

/* Sub-resources AWS's SigV2 documentation lists (plus the ones S3 added later), sorted. */
static const char *const subres[] = {"acl",
                                     "cors",
                                     "delete",
                                     "lifecycle",
                                     "location",
                                     "logging",
                                     "notification",
                                     "partNumber",
                                     "policy",
                                     "requestPayment",
                                     "response-cache-control",
                                     "response-content-disposition",
                                     "response-content-encoding",
                                     "response-content-language",
                                     "response-content-type",
                                     "response-expires",
                                     "restore",
                                     "tagging",
                                     "torrent",
                                     "uploadId",
                                     "uploads",
                                     "versionId",
                                     "versioning",
                                     "versions",
                                     "website"};

/* Signed in addition by botocore (HmacV1Auth.QSAOfInterest) or MinIO (resourceList). */
static const char *const subres_ext[] = {
    "accelerate", "analytics",   "defaultObjectAcl", "encryption",  "inventory",
    "legal-hold", "metrics",     "object-lock",      "replication", "retention",
    "select",     "select-type", "storageClass"};

/* ---- small helpers (locale-free on purpose) ---- */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* s[0..*n) without leading and trailing whitespace (what botocore's strip() signs). */
static const char *trim(const char *s, size_t *n)
{
    while (*n > 0 && is_space(*s)) {
        s++;
        (*n)--;
    }
    while (*n > 0 && is_space(s[*n - 1]))
        (*n)--;
    return s;
}

/* Byte at s[*i] after percent-decoding (a '%' not followed by two hex digits stands for
 * itself; '+' is a literal plus); advances *i. */
static unsigned char next_byte(const char *s, size_t n, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];

    if (c == '%' && *i + 2 < n) {
        int hi = hexval((unsigned char)s[*i + 1]), lo = hexval((unsigned char)s[*i + 2]);

        if (hi >= 0 && lo >= 0) {
            *i += 3;
            return (unsigned char)(hi << 4 | lo);
        }
    }
    (*i)++;
    return c;
}

static void pct_decode(struct hd_buf *b, const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = next_byte(s, n, &i);
        hd_buf_append(b, &c, 1);
    }
}

/* Does the percent-decoded s[0..n) equal lit? */
static int pct_equal(const char *s, size_t n, const char *lit)
{
    size_t i = 0;

    while (i < n) {
        if (!*lit || next_byte(s, n, &i) != (unsigned char)*lit)
            return 0;
        lit++;
    }
    return *lit == '\0';
}

/* Does the percent-decoded s[0..n) start with "x-amz-" (any case)? */
static int pct_amz_prefix(const char *s, size_t n)
{
    static const char pfx[] = "x-amz-";
    size_t i = 0;

    for (const char *p = pfx; *p; p++) {
        if (i >= n || lower((char)next_byte(s, n, &i)) != *p)
            return 0;
    }
    return 1;
}

/* Iterates "k=v&k2=v2": returns 0 at the end. Empty parts ("a&&b") are skipped. *has_eq
 * says whether the part had an '=' at all. */
static int query_next(const char **pp, const char **k, size_t *kl, const char **v, size_t *vl,
                      int *has_eq)
{
    const char *p = *pp;

    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);

        *pp = amp ? amp + 1 : p + len;
        if (len == 0) {
            p = *pp;
            continue;
        }
        *k = p;
        *kl = eq ? (size_t)(eq - p) : len;
        *v = eq ? eq + 1 : p + len;
        *vl = eq ? len - *kl - 1 : 0;
        *has_eq = eq != NULL;
        return 1;
    }
    return 0;
}

/* Decoded value of a query parameter into val; returns how many times it occurs. */
static int query_get(const char *q, const char *key, struct hd_buf *val)
{
    const char *k, *v;
    size_t kl, vl;
    int count = 0, eq;

    while (query_next(&q, &k, &kl, &v, &vl, &eq)) {
        if (!pct_equal(k, kl, key))
            continue;
        if (count++ == 0 && val)
            pct_decode(val, v, vl);
    }
    return count;
}

static int query_has(const char *q, const char *key)
{
    return query_get(q, key, NULL) > 0;
}

/* Same, but the key is compared case-insensitively after decoding (content-type ...). */
static int query_get_ci(const char *q, const char *key, struct hd_buf *val)
{
    struct hd_buf kb;
    const char *k, *v;
    size_t kl, vl;
    int count = 0, eq;

    hd_buf_init(&kb);
    while (query_next(&q, &k, &kl, &v, &vl, &eq)) {
        hd_buf_reset(&kb);
        pct_decode(&kb, k, kl);
        if (kb.oom) {
            count = -ENOMEM;
            break;
        }
        if (!kb.data || strcasecmp(kb.data, key) != 0 || memchr(kb.data, '\0', kb.len))
            continue;
        if (count++ == 0)
            pct_decode(val, v, vl);
    }
    hd_buf_cleanup(&kb);
    return count;
}

/* Finds a header (case-insensitive); *count gets how many times it occurs. */
static const char *find_header(const struct hd_kv *h, size_t n, const char *name, int *count)
{
    const char *v = NULL;

    *count = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i].k && strcasecmp(h[i].k, name) == 0) {
            if (!v)
                v = h[i].v ? h[i].v : "";
            (*count)++;
        }
    }
    return v;
}

static int in_list(const char *const *list, size_t n, const char *k, size_t kl)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == kl && memcmp(list[i], k, kl) == 0)
            return 1;
    return 0;
}

/* ---- string to sign ---- */

/* One "name\0value\0" entry kept in a scratch buffer, by offset (the buffer may move). */
struct entry {
    size_t name, value; /* offsets into the scratch buffer */
    size_t vlen;        /* value length: values may hold a decoded %00 */
    size_t seq;         /* arrival order, for a stable sort */
    const char *base;   /* the scratch data, set once collection is over */
};

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int r = strcmp(x->base + x->name, y->base + y->name);

    if (r)
        return r;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct entries {
    struct entry *e;
    size_t n, cap;
    struct hd_buf s;
};

static int entries_add(struct entries *es, const char *name, size_t nl, int lowercase,
                       const char *val, size_t vl, int decode)
{
    struct entry *e;
    size_t start;

    if (es->n == es->cap) {
        size_t cap = es->cap ? es->cap * 2 : 16;
        struct entry *ne = realloc(es->e, cap * sizeof(*ne));

        if (!ne)
            return -ENOMEM;
        es->e = ne;
        es->cap = cap;
    }
    e = &es->e[es->n];
    e->seq = es->n;
    e->name = es->s.len;
    if (decode)
        pct_decode(&es->s, name, nl);
    else
        hd_buf_append(&es->s, name, nl);
    if (lowercase && !es->s.oom)
        for (size_t i = e->name; i < es->s.len; i++)
            es->s.data[i] = lower(es->s.data[i]);
    hd_buf_append(&es->s, "", 1);
    e->value = es->s.len;
    if (decode)
        pct_decode(&es->s, val, vl);
    else
        hd_buf_append(&es->s, val, vl);
    start = e->value;
    e->vlen = es->s.len - start;
    hd_buf_append(&es->s, "", 1);
    if (es->s.oom)
        return -ENOMEM;
    es->n++;
    return 0;
}

static void entries_sort(struct entries *es)
{
    for (size_t i = 0; i < es->n; i++)
        es->e[i].base = es->s.data;
    if (es->n > 1)
        qsort(es->e, es->n, sizeof(es->e[0]), entry_cmp);
}

static void entries_cleanup(struct entries *es)
{
    free(es->e);
    hd_buf_cleanup(&es->s);
}

/* Appends a trimmed value and "\n". */
static void put_line(struct hd_buf *out, const char *v, size_t n)
{
    v = trim(v, &n);
    hd_buf_append(out, v, n);
    hd_buf_append(out, "\n", 1);
}

/* Content-MD5 / Content-Type line: the header, or in the query form the query parameter of
 * that name. */
static int std_line(const struct hd_sigv4_in *in, const char *q, const char *name, int presigned,
                    struct hd_buf *out)
{
    int count;
    const char *v = find_header(in->headers, in->nheaders, name, &count);

    if (count > 1)
        return HD_EBADHEADER;
    if (v) {
        put_line(out, v, strlen(v));
    } else if (presigned) {
        struct hd_buf val;
        int rc;

        hd_buf_init(&val);
        rc = query_get_ci(q, name, &val);
        if (rc >= 0 && val.oom)
            rc = -ENOMEM;
        if (rc >= 0)
            put_line(out, val.data ? val.data : "", val.len);
        hd_buf_cleanup(&val);
        if (rc < 0)
            return rc;
    } else {
        hd_buf_append(out, "\n", 1);
    }
    return 0;
}

/* CanonicalizedAmzHeaders. */
static int amz_headers(const struct hd_sigv4_in *in, const char *q, int presigned,
                       struct hd_buf *out)
{
    struct entries es = {0};
    int rc = 0;

    hd_buf_init(&es.s);
    for (size_t i = 0; i < in->nheaders && rc == 0; i++) {
        const char *k = in->headers[i].k, *v = in->headers[i].v ? in->headers[i].v : "";
        size_t vl = strlen(v);

        if (!k || strncasecmp(k, "x-amz-", 6) != 0)
            continue;
        v = trim(v, &vl);
        rc = entries_add(&es, k, strlen(k), 1, v, vl, 0);
    }
    if (presigned) {
        const char *k, *v;
        size_t kl, vl;
        int eq;

        while (rc == 0 && query_next(&q, &k, &kl, &v, &vl, &eq))
            if (pct_amz_prefix(k, kl))
                rc = entries_add(&es, k, kl, 1, v, vl, 1);
    }
    if (rc < 0)
        goto out;
    entries_sort(&es);
    for (size_t i = 0; i < es.n; i++) {
        const struct entry *e = &es.e[i];
        const char *name = es.s.data + e->name, *val = es.s.data + e->value;
        size_t vl = e->vlen;

        if (i == 0 || strcmp(name, es.s.data + es.e[i - 1].name) != 0) {
            hd_buf_puts(out, name);
            hd_buf_append(out, ":", 1);
        } else {
            hd_buf_append(out, ",", 1);
        }
        val = trim(val, &vl); /* decoded query values may carry blanks */
        hd_buf_append(out, val, vl);
        if (i + 1 == es.n || strcmp(name, es.s.data + es.e[i + 1].name) != 0)
            hd_buf_append(out, "\n", 1);
    }
out:
    entries_cleanup(&es);
    return rc;
}

/* CanonicalizedResource. *relevant collects the F_* bits that would change it. */
static int resource(const struct hd_sigv4_in *in, const char *q, int flags, int *relevant,
                    struct hd_buf *out)
{
    struct entries es = {0};
    const char *path = in->path ? in->path : "", *first = q;
    const char *k, *v;
    size_t kl, vl;
    int rc = 0, eq;

    hd_buf_init(&es.s);
    hd_buf_puts(out, path);
    if (path[0] == '/' && path[1] && !strchr(path + 1, '/')) {
        *relevant |= F_SLASH;
        if (flags & F_SLASH)
            hd_buf_append(out, "/", 1);
    }
    if (query_next(&first, &k, &kl, &v, &vl, &eq)) {
        *relevant |= F_BOTO;
        if (flags & F_BOTO) {
            hd_buf_append(out, "?", 1);
            hd_buf_append(out, k, (size_t)(v + vl - k));
        }
    }
    while (rc == 0 && query_next(&q, &k, &kl, &v, &vl, &eq)) {
        int ext = in_list(subres_ext, sizeof(subres_ext) / sizeof(subres_ext[0]), k, kl);
        int bare;

        if (!ext && !in_list(subres, sizeof(subres) / sizeof(subres[0]), k, kl))
            continue;
        if (ext)
            *relevant |= F_EXT;
        if (memchr(v, '%', vl))
            *relevant |= F_RAWVAL;
        if (eq && vl == 0)
            *relevant |= F_NOEQ;
        if (ext && !(flags & F_EXT))
            continue;
        /* A bare "k" gets vlen (size_t)-1 so it prints without '='. */
        bare = !eq || (vl == 0 && (flags & F_NOEQ));
        rc = entries_add(&es, k, kl, 0, v, bare ? 0 : vl, !(flags & F_RAWVAL));
        if (rc == 0 && bare)
            es.e[es.n - 1].vlen = (size_t)-1;
    }
    if (rc < 0)
        goto out;
    entries_sort(&es);
    for (size_t i = 0; i < es.n; i++) {
        const struct entry *e = &es.e[i];

        hd_buf_append(out, i ? "&" : "?", 1);
        hd_buf_puts(out, es.s.data + e->name);
        if (e->vlen != (size_t)-1) {
            hd_buf_append(out, "=", 1);
            hd_buf_append(out, es.s.data + e->value, e->vlen);
        }
    }
out:
    entries_cleanup(&es);
    return rc;
}

static int build_sts(const struct hd_sigv4_in *in, const char *expires, int flags, int *relevant,
                     struct hd_buf *out)
{
    const char *q = in->query ? in->query : "";
    int presigned = expires != NULL, rc;

    *relevant = 0;
    hd_buf_puts(out, in->method ? in->method : "");
    hd_buf_append(out, "\n", 1);
    rc = std_line(in, q, "content-md5", presigned, out);
    if (rc == 0)
        rc = std_line(in, q, "content-type", presigned, out);
    if (rc < 0)
        return rc;
    if (presigned) {
        put_line(out, expires, strlen(expires));
    } else {
        int nx, nd;
        const char *xd = find_header(in->headers, in->nheaders, "x-amz-date", &nx);
        const char *d = find_header(in->headers, in->nheaders, "date", &nd);

        if (xd && d)
            *relevant |= F_DATE;
        if (d && (!xd || (flags & F_DATE)))
            put_line(out, d, strlen(d));
        else
            hd_buf_append(out, "\n", 1);
    }
    rc = amz_headers(in, q, presigned, out);
    if (rc == 0)
        rc = resource(in, q, flags, relevant, out);
    if (rc == 0 && out->oom)
        rc = -ENOMEM;
    return rc;
}

int hd_sigv2_string_to_sign(const struct hd_sigv4_in *in, const char *expires, struct hd_buf *out)
{
    int relevant;

    return build_sts(in, expires, 0, &relevant, out);
}

static void hmac_sha1(const char *secret, const char *msg, size_t n, unsigned char mac[SHA1_LEN])
{
    unsigned int len = 0;
    size_t klen = strlen(secret);

    if (klen > INT32_MAX ||
        !HMAC(EVP_sha1(), secret, (int)klen, (const unsigned char *)msg, n, mac, &len) ||
        len != SHA1_LEN)
        abort();
}

void hd_sigv2_sign(const char *secret, const char *sts, size_t n, char out[HD_SIGV2_SIG_LEN + 1])
{
    unsigned char mac[SHA1_LEN];

    hmac_sha1(secret, sts, n, mac);
    if (hd_b64_encode(mac, SHA1_LEN, out, HD_SIGV2_SIG_LEN + 1) < 0)
        abort(); /* 28 chars + NUL always fit */
}

/* ---- verification ---- */

/* Copies s[0..n) into dst (cap bytes) if it is 1..cap-1 visible ASCII characters. */
static int copy_ak(char dst[HD_SIGV4_AK_MAX], const char *s, size_t n)
{
    if (n == 0 || n >= HD_SIGV4_AK_MAX)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

static int decode_sig(const char *s, size_t n, unsigned char raw[SHA1_LEN])
{
    size_t len = 0;

    if (n != HD_SIGV2_SIG_LEN || hd_b64_decode(s, n, raw, SHA1_LEN, &len) < 0 || len != SHA1_LEN)
        return -1;
    return 0;
}

/* The spellings clients sign, as F_* sets; each is tried with and without F_SLASH, limited
 * to the bits that matter for the request, each distinct set once (at most 14 HMACs). */
static const int profiles[] = {
    0,                       /* AWS's definition */
    F_EXT,                   /* SDK for Java 1.x: its longer sub-resource list */
    F_EXT | F_DATE,          /* botocore */
    F_BOTO | F_EXT | F_DATE, /* botocore, operations with a fixed query */
    F_RAWVAL,                /* s3cmd */
    F_NOEQ,                  /* MinIO */
    F_NOEQ | F_EXT,          /* MinIO */
};

/* Looks the secret up and compares sig against the spellings of the string to sign. */
static int check(const struct hd_sigv4_in *in, const char *expires, const char *ak,
                 const unsigned char sig[SHA1_LEN], hd_sigv4_secret_fn secret_for, void *ctx)
{
    char secret[HD_SIGV4_SECRET_MAX];
    unsigned char mac[SHA1_LEN];
    struct hd_buf sts;
    uint64_t tried = 1; /* bit m: flag set m done; set 0 comes first */
    int rc, relevant = 0, ignored;

    hd_buf_init(&sts);
    secret[0] = '\0';
    rc = secret_for(ctx, ak, secret, sizeof(secret));
    secret[sizeof(secret) - 1] = '\0';
    if (rc > 0)
        rc = HD_EINTERNAL;
    if (rc < 0)
        goto out;
    rc = build_sts(in, expires, 0, &relevant, &sts);
    if (rc < 0)
        goto out;
    hmac_sha1(secret, sts.data, sts.len, mac);
    if (CRYPTO_memcmp(mac, sig, SHA1_LEN) == 0)
        goto out;
    rc = HD_EBADSIG;
    for (size_t i = 0; i < 2 * sizeof(profiles) / sizeof(profiles[0]); i++) {
        int m = (profiles[i / 2] | (i % 2 ? F_SLASH : 0)) & relevant, r;

        if (tried & (1ull << m))
            continue;
        tried |= 1ull << m;
        hd_buf_reset(&sts);
        r = build_sts(in, expires, m, &ignored, &sts);
        if (r < 0) {
            rc = r;
            break;
        }
        hmac_sha1(secret, sts.data, sts.len, mac);
        if (CRYPTO_memcmp(mac, sig, SHA1_LEN) == 0) {
            rc = 0;
            break;
        }
    }
out:
    OPENSSL_cleanse(secret, sizeof(secret));
    OPENSSL_cleanse(mac, sizeof(mac));
    hd_buf_cleanup(&sts);
    return rc;
}

static int verify_header(const struct hd_sigv4_in *in, const char *authz,
                         hd_sigv4_secret_fn secret_for, void *ctx, struct hd_sigv4_auth *out)
{
    unsigned char sig[SHA1_LEN];
    const char *s = authz, *colon, *d;
    size_t sl;
    long long skew;
    time_t t;
    int count;

    while (is_space(*s))
        s++;
    s += 4; /* "AWS ", checked by the caller */
    while (*s == ' ')
        s++;
    colon = strrchr(s, ':'); /* base64 has no ':', an access key might */
    if (!colon)
        return HD_EV2AUTHFORM; /* "AWS HAHAHA": AWS's 400 InvalidArgument (s3-tests) */
    if (copy_ak(out->access_key, s, (size_t)(colon - s)) < 0)
        return HD_EAUTHHDR;
    sl = strlen(colon + 1);
    s = trim(colon + 1, &sl);
    if (decode_sig(s, sl, sig) < 0)
        return HD_EAUTHHDR;
    /* x-amz-date wins over Date, even empty; either in any form hd_date_parse reads (s3cmd
     * writes "+0000"). No date, a bad one or one before 1970: what AWS answers (403) */
    d = find_header(in->headers, in->nheaders, "x-amz-date", &count);
    if (!d)
        d = find_header(in->headers, in->nheaders, "date", &count);
    if (!d || count > 1 || hd_date_parse(d, &t) < 0 || t < 0)
        return HD_EDATE;
    skew = (long long)in->now - (long long)t;
    if (skew > HD_SIGV4_MAX_SKEW || skew < -HD_SIGV4_MAX_SKEW)
        return HD_ESKEW;
    out->date = t;
    hd_sigv4_amz_date(t, out->amz_date);
    return check(in, NULL, out->access_key, sig, secret_for, ctx);
}

enum { QP_AK, QP_EXPIRES, QP_SIG, QP_N };

static int verify_query(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                        struct hd_sigv4_auth *out)
{
    static const char *const names[QP_N] = {"AWSAccessKeyId", "Expires", "Signature"};
    struct hd_buf qv[QP_N];
    unsigned char sig[SHA1_LEN];
    long long expires = 0;
    int rc = HD_EAUTHQUERY;

    for (int i = 0; i < QP_N; i++)
        hd_buf_init(&qv[i]);
    for (int i = 0; i < QP_N; i++) {
        if (query_get(in->query, names[i], &qv[i]) != 1)
            goto out;
        if (qv[i].oom) {
            rc = -ENOMEM;
            goto out;
        }
        if (!qv[i].data || memchr(qv[i].data, '\0', qv[i].len))
            goto out; /* empty, or an embedded %00 */
    }
    if (copy_ak(out->access_key, qv[QP_AK].data, qv[QP_AK].len) < 0)
        goto out;
    if (qv[QP_EXPIRES].len > EXPIRES_DIGITS_MAX)
        goto out;
    for (size_t i = 0; i < qv[QP_EXPIRES].len; i++) {
        char c = qv[QP_EXPIRES].data[i];

        if (c < '0' || c > '9')
            goto out;
        expires = expires * 10 + (c - '0');
    }
    if (decode_sig(qv[QP_SIG].data, qv[QP_SIG].len, sig) < 0)
        goto out;
    out->expires_at = (time_t)expires;
    if ((long long)in->now > expires) {
        rc = HD_EEXPIRED;
        goto out;
    }
    out->presigned = 1;
    rc = check(in, qv[QP_EXPIRES].data, out->access_key, sig, secret_for, ctx);
out:
    for (int i = 0; i < QP_N; i++)
        hd_buf_cleanup(&qv[i]);
    return rc;
}

/* Is v an "AWS <credentials>" (SigV2) Authorization value? */
static int is_v2_authz(const char *v)
{
    while (is_space(*v))
        v++;
    return strncmp(v, "AWS ", 4) == 0;
}

int hd_sigv2_verify(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                    struct hd_sigv4_auth *out)
{
    struct hd_sigv4_in copy = *in;
    const char *q = in->query ? in->query : "";
    const char *v2authz = NULL;
    int nauthz = 0, v2query, v4query, rc;

    memset(out, 0, sizeof(*out));
    copy.query = q;
    for (size_t i = 0; i < in->nheaders; i++) {
        const char *k = in->headers[i].k, *v = in->headers[i].v ? in->headers[i].v : "";

        if (!k || strcasecmp(k, "authorization") != 0)
            continue;
        nauthz++;
        if (!v2authz && is_v2_authz(v))
            v2authz = v;
    }
    v2query = query_has(q, "AWSAccessKeyId") || query_has(q, "Signature");
    if (!v2authz && !v2query)
        return HD_DECLINED;
    v4query = query_has(q, "X-Amz-Algorithm") || query_has(q, "X-Amz-Credential") ||
              query_has(q, "X-Amz-Signature");
    if (v4query || (v2query && nauthz > 0))
        return HD_EBADARG; /* S3: "Only one auth mechanism allowed" */
    if (v2authz) {
        if (nauthz > 1)
            return HD_EAUTHHDR;
        rc = verify_header(&copy, v2authz, secret_for, ctx, out);
    } else {
        rc = verify_query(&copy, secret_for, ctx, out);
    }
    if (rc == 0)
        out->payload = HD_PL_UNSIGNED;
    return rc;
}
