#include "common/sigv4.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>

#include "common/buf.h"
#include "common/httputil.h"
#include "common/cksum.h"
#include "common/errors.h"

#define ALGO "AWS4-HMAC-SHA256"
#define ALGO_LEN (sizeof(ALGO) - 1)
#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

static const char empty_sha256_hex[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/* ---- small character helpers (locale-free on purpose) ---- */

static int is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

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

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 9110 tchar: what a header field name may consist of. */
static int is_tchar(char ch)
{
    unsigned char c = (unsigned char)ch;

    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Byte at s[*i] after percent-decoding (a '%' not followed by two hex digits stands for
 * itself); advances *i past what it consumed and sets *escaped for a %XX. */
static unsigned char next_byte(const char *s, size_t n, size_t *i, int *escaped)
{
    unsigned char c = (unsigned char)s[*i];
    int hi = -1, lo = -1;

    if (c == '%' && *i + 2 < n) {
        hi = hexval((unsigned char)s[*i + 1]);
        lo = hexval((unsigned char)s[*i + 2]);
    }
    *escaped = hi >= 0 && lo >= 0;
    if (!*escaped) {
        (*i)++;
        return c;
    }
    *i += 3;
    return (unsigned char)(hi << 4 | lo);
}

#define ENC_KEEP_SLASH 1 /* a literal '/' stays (paths) */
#define ENC_DECODE 2     /* input is already percent-encoded: decode each byte first */

/* SigV4 URI encoding of s[0..n): unreserved bytes as is, all others %XX (uppercase).
 * With ENC_KEEP_SLASH a '/' written literally stays, while %2F stays encoded, so a key
 * containing an encoded slash keeps its spelling. Errors show up as b->oom. */
static void uri_encode(struct hd_buf *b, const char *s, size_t n, int flags)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t i = 0;

    while (i < n) {
        int escaped = 0;
        unsigned char c;
        char e[3];

        if (flags & ENC_DECODE)
            c = next_byte(s, n, &i, &escaped);
        else
            c = (unsigned char)s[i++];
        if (is_unreserved(c) || (c == '/' && !escaped && (flags & ENC_KEEP_SLASH))) {
            hd_buf_append(b, &c, 1);
            continue;
        }
        e[0] = '%';
        e[1] = hx[c >> 4];
        e[2] = hx[c & 15];
        hd_buf_append(b, e, 3);
    }
}

/* Percent-decodes s[0..n) into b ('+' stays '+'). */
static void pct_decode(struct hd_buf *b, const char *s, size_t n)
{
    size_t i = 0;
    int escaped;

    while (i < n) {
        unsigned char c = next_byte(s, n, &i, &escaped);
        hd_buf_append(b, &c, 1);
    }
}

/* Does the percent-decoded s[0..n) equal lit? */
static int pct_equal(const char *s, size_t n, const char *lit)
{
    size_t i = 0;
    int escaped;

    while (i < n) {
        if (!*lit || next_byte(s, n, &i, &escaped) != (unsigned char)*lit)
            return 0;
        lit++;
    }
    return *lit == '\0';
}

/* Iterates "k=v&k2=v2": returns 0 at the end. Empty parts ("a&&b") are skipped. */
static int query_next(const char **pp, const char **k, size_t *kl, const char **v, size_t *vl)
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
        return 1;
    }
    return 0;
}

/* ---- canonical request ---- */

struct qpair {
    const char *k, *v;
};

static int qpair_cmp(const void *a, const void *b)
{
    const struct qpair *x = a, *y = b;
    int r = strcmp(x->k, y->k);

    return r ? r : strcmp(x->v, y->v);
}

/* Canonical query: every pair re-encoded into scratch as "k\0v\0", then sorted. */
static int canon_query(struct hd_buf *out, const char *q, int presigned)
{
    struct hd_buf s;
    size_t *off = NULL, n = 0, cap = 0;
    struct qpair *qp = NULL;
    const char *k, *v;
    size_t kl, vl;
    int rc = -ENOMEM;

    hd_buf_init(&s);
    while (query_next(&q, &k, &kl, &v, &vl)) {
        size_t start = s.len;
        if (presigned && pct_equal(k, kl, "X-Amz-Signature"))
            continue;
        if (n == cap) {
            size_t *no = realloc(off, (cap ? cap * 2 : 16) * sizeof(*off));
            if (!no)
                goto out;
            off = no;
            cap = cap ? cap * 2 : 16;
        }
        off[n++] = start;
        uri_encode(&s, k, kl, ENC_DECODE);
        hd_buf_append(&s, "", 1);
        uri_encode(&s, v, vl, ENC_DECODE);
        hd_buf_append(&s, "", 1);
    }
    if (s.oom)
        goto out;
    if (n) {
        qp = malloc(n * sizeof(*qp));
        if (!qp)
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        qp[i].k = s.data + off[i];
        qp[i].v = qp[i].k + strlen(qp[i].k) + 1;
    }
    if (n > 1)
        qsort(qp, n, sizeof(*qp), qpair_cmp);
    for (size_t i = 0; i < n; i++)
        hd_buf_printf(out, "%s%s=%s", i ? "&" : "", qp[i].k, qp[i].v);
    rc = out->oom ? -ENOMEM : 0;
out:
    free(qp);
    free(off);
    hd_buf_cleanup(&s);
    return rc;
}

/* A header value trimmed, with inner runs of blanks folded to one space. */
static void append_value(struct hd_buf *b, const char *v)
{
    const char *e = v + strlen(v);
    int pending = 0;

    while (is_blank(*v))
        v++;
    while (e > v && is_blank(e[-1]))
        e--;
    for (; v < e; v++) {
        if (is_blank(*v)) {
            pending = 1;
            continue;
        }
        if (pending)
            hd_buf_append(b, " ", 1);
        pending = 0;
        hd_buf_append(b, v, 1);
    }
}

/* One "name:v1,v2\n" line per signed header, in the order SignedHeaders lists them. */
static void canon_headers(struct hd_buf *b, const struct hd_kv *h, size_t n, const char *sh)
{
    const char *p = sh;

    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        int first = 1;

        for (size_t i = 0; i < len; i++) {
            char c = lower(p[i]);
            hd_buf_append(b, &c, 1);
        }
        hd_buf_append(b, ":", 1);
        for (size_t i = 0; i < n; i++) {
            if (!h[i].k || strlen(h[i].k) != len || strncasecmp(h[i].k, p, len) != 0)
                continue;
            if (!first)
                hd_buf_append(b, ",", 1);
            append_value(b, h[i].v ? h[i].v : "");
            first = 0;
        }
        hd_buf_append(b, "\n", 1);
        p += len;
        if (*p == ';')
            p++;
    }
}

int hd_sigv4_canonical_request(const struct hd_sigv4_creq *c, struct hd_buf *out)
{
    int rc;

    hd_buf_puts(out, c->method);
    hd_buf_append(out, "\n", 1);
    if (!c->path || !*c->path)
        hd_buf_append(out, "/", 1);
    else
        uri_encode(out, c->path, strlen(c->path), ENC_DECODE | ENC_KEEP_SLASH);
    hd_buf_append(out, "\n", 1);
    rc = canon_query(out, c->query ? c->query : "", c->presigned);
    if (rc < 0)
        return rc;
    hd_buf_append(out, "\n", 1);
    canon_headers(out, c->headers, c->nheaders, c->signed_headers);
    hd_buf_printf(out, "\n%s\n%s", c->signed_headers, c->payload_hash);
    return out->oom ? -ENOMEM : 0;
}

int hd_sigv4_string_to_sign(const char *amz_date, const char *scope, const char *creq,
                            size_t creq_len, struct hd_buf *out)
{
    unsigned char h[32];
    char hx[65];

    hd_sha256(creq, creq_len, h);
    hd_hex(h, 32, hx);
    return hd_buf_printf(out, ALGO "\n%s\n%s\n%s", amz_date, scope, hx);
}

/* The signing keys this thread derived last. A client signs a day's requests with one key, and
 * deriving it takes four HMACs (7 us here, most of a signature check's cost); AWS's SDKs keep
 * it the same way. Entries are named by the SHA-256 of what the key is derived from, so the
 * cache holds no secret but the derived keys themselves. */
#define SK_CACHE 4
static __thread struct sk_entry {
    unsigned char id[32], key[32];
    int used;
} sk_cache[SK_CACHE];
static __thread unsigned sk_next;

static void signing_key_derive(const char *secret, const char *date8, const char *region,
                               const char *service, unsigned char out[32]);

void hd_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char out[32])
{
    const char *parts[4] = {secret, date8, region, service};
    char in[4 * 160];
    unsigned char id[32];
    size_t i, n = 0, l;

    for (i = 0; i < 4; i++) {
        l = strlen(parts[i]) + 1; /* with its NUL: "ab","c" and "a","bc" differ */
        if (l > sizeof(in) - n) {
            signing_key_derive(secret, date8, region, service, out); /* not cached */
            OPENSSL_cleanse(in, n);
            return;
        }
        memcpy(in + n, parts[i], l);
        n += l;
    }
    hd_sha256(in, n, id);
    OPENSSL_cleanse(in, n);
    for (i = 0; i < SK_CACHE; i++)
        if (sk_cache[i].used && CRYPTO_memcmp(sk_cache[i].id, id, 32) == 0) {
            memcpy(out, sk_cache[i].key, 32);
            return;
        }
    signing_key_derive(secret, date8, region, service, out);
    i = sk_next++ % SK_CACHE;
    memcpy(sk_cache[i].id, id, 32);
    memcpy(sk_cache[i].key, out, 32);
    sk_cache[i].used = 1;
}

static void signing_key_derive(const char *secret, const char *date8, const char *region,
                               const char *service, unsigned char out[32])
{
    char k[4 + HD_SIGV4_SECRET_MAX];
    unsigned char a[32], b[32];
    size_t sl = strnlen(secret, HD_SIGV4_SECRET_MAX - 1); /* longer secrets are not valid */

    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, sl);
    k[4 + sl] = '\0'; /* not needed by HMAC; keeps k a string for the reader and tools */
    hd_hmac_sha256(k, 4 + sl, date8, strlen(date8), a);
    hd_hmac_sha256(a, 32, region, strlen(region), b);
    hd_hmac_sha256(b, 32, service, strlen(service), a);
    hd_hmac_sha256(a, 32, "aws4_request", 12, out);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
}

/* ---- dates ---- */

void hd_sigv4_amz_date(time_t t, char out[17])
{
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
        out[0] = '\0';
}

static int digits(const char *s, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Strict YYYYMMDDTHHMMSSZ. Calendar-checked by a round trip through gmtime. */
static int parse_amz_date(const char *s, size_t n, time_t *t)
{
    struct tm tm = {0}, back;
    char again[17];

    if (n != 16 || s[8] != 'T' || s[15] != 'Z')
        return -1;
    tm.tm_year = digits(s, 4) - 1900;
    tm.tm_mon = digits(s + 4, 2) - 1;
    tm.tm_mday = digits(s + 6, 2);
    tm.tm_hour = digits(s + 9, 2);
    tm.tm_min = digits(s + 11, 2);
    tm.tm_sec = digits(s + 13, 2);
    if (tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mday < 0 || tm.tm_hour < 0 || tm.tm_min < 0 ||
        tm.tm_sec < 0)
        return -1;
    *t = timegm(&tm);
    if (!gmtime_r(t, &back) || strftime(again, sizeof(again), "%Y%m%dT%H%M%SZ", &back) != 16 ||
        memcmp(again, s, 16) != 0)
        return -1;
    return 0;
}

/* ---- credential, Authorization header ---- */

struct cred {
    char ak[HD_SIGV4_AK_MAX];
    char date8[9];
    char region[HD_SIGV4_PART_MAX];
    char service[HD_SIGV4_PART_MAX];
};

/* Copies s[0..n) into dst (cap bytes) if it is 1..cap-1 visible ASCII characters. */
static int copy_part(char *dst, size_t cap, const char *s, size_t n)
{
    if (n == 0 || n >= cap)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

/* "AK/YYYYMMDD/region/service/aws4_request". Parsed from the right, so an access key
 * containing '/' (some S3 implementations allow it) still works. */
static int parse_cred(const char *s, size_t n, struct cred *c)
{
    const char *slash[4];
    size_t e = n;

    for (int i = 3; i >= 0; i--) {
        while (e > 0 && s[e - 1] != '/')
            e--;
        if (e == 0)
            return -1;
        slash[i] = s + e - 1;
        e--;
    }
    if (copy_part(c->ak, sizeof(c->ak), s, (size_t)(slash[0] - s)) < 0 ||
        copy_part(c->date8, sizeof(c->date8), slash[0] + 1, (size_t)(slash[1] - slash[0] - 1)) <
            0 ||
        strlen(c->date8) != 8 || digits(c->date8, 8) < 0 ||
        copy_part(c->region, sizeof(c->region), slash[1] + 1, (size_t)(slash[2] - slash[1] - 1)) <
            0 ||
        copy_part(c->service, sizeof(c->service), slash[2] + 1, (size_t)(slash[3] - slash[2] - 1)) <
            0)
        return -1;
    if ((size_t)(s + n - slash[3] - 1) != 12 || memcmp(slash[3] + 1, "aws4_request", 12) != 0)
        return -1;
    return 0;
}

/* Everything either auth form yields before the cryptography. */
struct parsed {
    struct cred cred;
    const char *sh; /* SignedHeaders, NUL-terminated (points into scratch or the header) */
    char sig[65];   /* client's signature, lowercase hex */
    char amz_date[17];
    time_t t;
    int presigned;
};

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

static int copy_sig(char dst[65], const char *s, size_t n)
{
    unsigned char raw[32];
    size_t len;

    if (n != 64 || hd_unhex(s, n, raw, sizeof(raw), &len) < 0)
        return -1;
    hd_hex(raw, 32, dst); /* normalise case */
    return 0;
}

/* Splits "Credential=..., SignedHeaders=..., Signature=..." (any order, optional blanks
 * after commas). SignedHeaders is copied into sh_buf so it can be NUL-terminated. */
static int parse_authz(const char *v, struct parsed *p, struct hd_buf *sh_buf)
{
    const char *s = v;
    int have_c = 0, have_h = 0, have_s = 0;

    while (is_blank(*s))
        s++;
    if (strncmp(s, ALGO, ALGO_LEN) != 0 || !is_blank(s[ALGO_LEN]))
        return HD_EAUTHHDR;
    s += ALGO_LEN;
    for (;;) {
        const char *name, *val, *end;
        size_t nl, vl;

        while (is_blank(*s))
            s++;
        name = s;
        while (*s && *s != '=' && *s != ',')
            s++;
        if (*s != '=')
            return HD_EAUTHHDR;
        nl = (size_t)(s - name);
        val = ++s;
        while (*s && *s != ',')
            s++;
        end = s;
        while (end > val && is_blank(end[-1]))
            end--;
        vl = (size_t)(end - val);
        if (nl == 10 && memcmp(name, "Credential", 10) == 0 && !have_c++) {
            if (parse_cred(val, vl, &p->cred) < 0)
                return HD_EAUTHHDR;
        } else if (nl == 13 && memcmp(name, "SignedHeaders", 13) == 0 && !have_h++) {
            hd_buf_append(sh_buf, val, vl);
        } else if (nl == 9 && memcmp(name, "Signature", 9) == 0 && !have_s++) {
            if (copy_sig(p->sig, val, vl) < 0)
                return HD_EAUTHHDR;
        } else {
            return HD_EAUTHHDR; /* unknown or repeated component */
        }
        if (!*s)
            break;
        s++; /* ',' */
    }
    if (!have_c || !have_h || !have_s)
        return HD_EAUTHHDR;
    if (sh_buf->oom)
        return -ENOMEM;
    p->sh = sh_buf->data;
    return 0;
}

/* SignedHeaders must be lowercase names separated by single ';' and include host. */
static int signed_headers_ok(const char *sh)
{
    const char *p = sh;
    int host = 0;

    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len == 0)
            return 0;
        for (size_t i = 0; i < len; i++)
            if (!is_tchar(p[i]) || (p[i] >= 'A' && p[i] <= 'Z'))
                return 0;
        if (len == 4 && memcmp(p, "host", 4) == 0)
            host = 1;
        p += len;
        if (*p == ';' && !*++p)
            return 0; /* trailing ';' */
    }
    return host;
}

/* ---- payload classification ---- */

static int classify_payload(const char *v, enum hd_payload *pl, unsigned char sha[32])
{
    static const struct {
        const char *s;
        enum hd_payload pl;
    } names[] = {
        {UNSIGNED_PAYLOAD, HD_PL_UNSIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", HD_PL_STREAMING_SIGNED},
        {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", HD_PL_STREAMING_SIGNED_TRAILER},
        {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", HD_PL_STREAMING_UNSIGNED_TRAILER},
    };
    size_t len;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(v, names[i].s) == 0) {
            *pl = names[i].pl;
            return 0;
        }
    }
    if (strlen(v) == 64 && hd_unhex(v, 64, sha, 32, &len) == 0) {
        *pl = HD_PL_HEX;
        return 0;
    }
    return HD_EBADHEADER;
}

/* The payload line of the canonical request and its classification. Header auth without
 * x-amz-content-sha256 signed sha256("") (curl --aws-sigv4 does that); presigned requests
 * default to UNSIGNED-PAYLOAD. */
static int payload_line(const struct hd_sigv4_in *in, int presigned, char line[80],
                        struct hd_sigv4_auth *out)
{
    int count, rc = HD_EBADHEADER;
    const char *v = find_header(in->headers, in->nheaders, "x-amz-content-sha256", &count);
    struct hd_buf b;

    if (!v)
        v = presigned ? UNSIGNED_PAYLOAD : empty_sha256_hex;
    if (count > 1)
        return HD_EBADHEADER;
    hd_buf_init(&b);
    append_value(&b, v); /* the canonical request signs the trimmed value */
    if (b.oom)
        rc = -ENOMEM;
    else if (b.data && b.len < 80) {
        memcpy(line, b.data, b.len + 1);
        rc = classify_payload(line, &out->payload, out->payload_sha256);
    }
    hd_buf_cleanup(&b);
    return rc;
}

/* ---- the check shared by both forms ---- */

static int lookup_secret(hd_sigv4_secret_fn secret_for, void *ctx, const char *ak,
                         char secret[HD_SIGV4_SECRET_MAX])
{
    int rc;

    secret[0] = '\0';
    rc = secret_for(ctx, ak, secret, HD_SIGV4_SECRET_MAX);
    secret[HD_SIGV4_SECRET_MAX - 1] = '\0';
    if (rc > 0)
        rc = HD_EINTERNAL;
    return rc;
}

static int check_signature(const struct hd_sigv4_in *in, const struct parsed *p,
                           const char *payload, hd_sigv4_secret_fn secret_for, void *ctx,
                           struct hd_sigv4_auth *out)
{
    char secret[HD_SIGV4_SECRET_MAX];
    struct hd_sigv4_creq c = {in->method,   in->path, in->query, in->headers,
                              in->nheaders, p->sh,    payload,   p->presigned};
    struct hd_buf creq, sts;
    unsigned char mac[32], want[32];
    size_t len;
    int rc;

    hd_buf_init(&creq);
    hd_buf_init(&sts);
    rc = lookup_secret(secret_for, ctx, p->cred.ak, secret);
    if (rc < 0)
        goto out;
    hd_sigv4_signing_key(secret, p->cred.date8, p->cred.region, p->cred.service, out->signing_key);
    rc = hd_sigv4_canonical_request(&c, &creq);
    if (rc == 0)
        rc = hd_sigv4_string_to_sign(p->amz_date, out->scope, creq.data, creq.len, &sts);
    if (rc == 0) {
        hd_hmac_sha256(out->signing_key, 32, sts.data, sts.len, mac);
        hd_unhex(p->sig, 64, want, sizeof(want), &len);
        rc = CRYPTO_memcmp(mac, want, 32) == 0 ? 0 : HD_EBADSIG;
    }
out:
    hd_buf_cleanup(&sts);
    hd_buf_cleanup(&creq);
    OPENSSL_cleanse(secret, sizeof(secret));
    return rc;
}

/* Fills the identity part of out, then checks the signature. */
static int finish(const struct hd_sigv4_in *in, struct parsed *p, int emal,
                  hd_sigv4_secret_fn secret_for, void *ctx, struct hd_sigv4_auth *out)
{
    char payload[80];
    int rc, n;

    if (!signed_headers_ok(p->sh))
        return emal;
    n = snprintf(out->scope, sizeof(out->scope), "%s/%s/%s/aws4_request", p->cred.date8,
                 p->cred.region, p->cred.service);
    if (n < 0 || (size_t)n >= sizeof(out->scope))
        return emal;
    rc = payload_line(in, p->presigned, payload, out);
    if (rc < 0)
        return rc;
    memcpy(out->region, p->cred.region, sizeof(out->region));
    memcpy(out->service, p->cred.service, sizeof(out->service));
    memcpy(out->amz_date, p->amz_date, sizeof(out->amz_date));
    out->date = p->t;
    out->presigned = p->presigned;
    rc = check_signature(in, p, payload, secret_for, ctx, out);
    if (rc < 0) {
        OPENSSL_cleanse(out->signing_key, sizeof(out->signing_key));
        return rc;
    }
    memcpy(out->signature, p->sig, sizeof(out->signature));
    return 0;
}

/* Authorization-header form. The request time comes from X-Amz-Date or, failing that, the
 * Date header; either way the credential date must be its day. */
static int verify_header(const struct hd_sigv4_in *in, const char *authz,
                         hd_sigv4_secret_fn secret_for, void *ctx, struct hd_sigv4_auth *out)
{
    struct parsed p;
    struct hd_buf sh;
    const char *d;
    long long skew;
    int rc, count;

    memset(&p, 0, sizeof(p));
    hd_buf_init(&sh);
    rc = parse_authz(authz, &p, &sh);
    if (rc < 0)
        goto out;
    memcpy(out->access_key, p.cred.ak, sizeof(out->access_key));
    rc = HD_EAUTHHDR;
    d = find_header(in->headers, in->nheaders, "x-amz-date", &count);
    if (d) {
        if (count > 1 || parse_amz_date(d, strlen(d), &p.t) < 0)
            goto out;
    } else {
        /* botocore signs with Date alone when the request carries one (a retry, or the
         * caller's), in email.utils.formatdate's form "Wed, 25 Nov 2026 13:30:59 -0000";
         * the string to sign then holds that instant in ISO 8601 basic form */
        d = find_header(in->headers, in->nheaders, "date", &count);
        if (!d || count > 1 || hd_date_parse(d, &p.t) < 0)
            goto out;
    }
    hd_sigv4_amz_date(p.t, p.amz_date);
    if (memcmp(p.amz_date, p.cred.date8, 8) != 0)
        goto out;
    skew = (long long)in->now - (long long)p.t;
    if (skew > HD_SIGV4_MAX_SKEW || skew < -HD_SIGV4_MAX_SKEW) {
        rc = HD_ESKEW;
        goto out;
    }
    rc = finish(in, &p, HD_EAUTHHDR, secret_for, ctx, out);
out:
    hd_buf_cleanup(&sh);
    return rc;
}

/* Decoded value of a query parameter; returns how many times it occurs. */
static int query_get(const char *q, const char *key, struct hd_buf *val)
{
    const char *k, *v;
    size_t kl, vl;
    int count = 0;

    while (query_next(&q, &k, &kl, &v, &vl)) {
        if (!pct_equal(k, kl, key))
            continue;
        if (count++ == 0)
            pct_decode(val, v, vl);
    }
    return count;
}

static int query_has(const char *q, const char *key)
{
    const char *k, *v;
    size_t kl, vl;

    while (query_next(&q, &k, &kl, &v, &vl))
        if (pct_equal(k, kl, key))
            return 1;
    return 0;
}

enum { QP_ALGO, QP_CRED, QP_DATE, QP_EXPIRES, QP_SH, QP_SIG, QP_N };

/* X-Amz-Expires as AWS reads it: 0..604800, or the error naming what is wrong with it. */
static int parse_expires(const char *v, long *out)
{
    const char *p = v + (*v == '-');
    long long n = 0;

    if (!*p)
        return HD_EEXPIRESNAN;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return HD_EEXPIRESNAN;
        if (n <= HD_SIGV4_MAX_EXPIRES)
            n = n * 10 + (*p - '0');
    }
    if (*v == '-' && n > 0)
        return HD_EEXPIRESNEG;
    if (n > HD_SIGV4_MAX_EXPIRES)
        return HD_EEXPIRESMAX;
    *out = (long)n;
    return 0;
}

/* Presigned form: X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders and
 * -Signature, each exactly once. */
static int verify_query(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                        struct hd_sigv4_auth *out)
{
    static const char *const names[QP_N] = {"X-Amz-Algorithm",     "X-Amz-Credential",
                                            "X-Amz-Date",          "X-Amz-Expires",
                                            "X-Amz-SignedHeaders", "X-Amz-Signature"};
    struct hd_buf qv[QP_N];
    struct parsed p;
    long expires = 0;
    int rc = HD_EAUTHQUERY;

    memset(&p, 0, sizeof(p));
    p.presigned = 1;
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
    if (strcmp(qv[QP_ALGO].data, ALGO) != 0 ||
        parse_cred(qv[QP_CRED].data, qv[QP_CRED].len, &p.cred) < 0)
        goto out;
    memcpy(out->access_key, p.cred.ak, sizeof(out->access_key));
    if (parse_amz_date(qv[QP_DATE].data, qv[QP_DATE].len, &p.t) < 0 ||
        memcmp(qv[QP_DATE].data, p.cred.date8, 8) != 0 ||
        copy_sig(p.sig, qv[QP_SIG].data, qv[QP_SIG].len) < 0)
        goto out;
    memcpy(p.amz_date, qv[QP_DATE].data, 16);
    if ((rc = parse_expires(qv[QP_EXPIRES].data, &expires)) < 0)
        goto out;
    out->date = p.t;
    out->expires_in = expires;
    out->expires_at = (time_t)((long long)p.t + expires);
    /* AWS: X-Amz-Expires=0 has expired as it was made */
    if (expires == 0 || (long long)in->now > (long long)p.t + expires) {
        rc = HD_EEXPIRED;
        goto out;
    }
    if ((long long)p.t - (long long)in->now > HD_SIGV4_MAX_SKEW) {
        rc = HD_ENOTYET;
        goto out;
    }
    p.sh = qv[QP_SH].data;
    rc = finish(in, &p, HD_EAUTHQUERY, secret_for, ctx, out);
out:
    for (int i = 0; i < QP_N; i++)
        hd_buf_cleanup(&qv[i]);
    return rc;
}

int hd_sigv4_verify(const struct hd_sigv4_in *in, hd_sigv4_secret_fn secret_for, void *ctx,
                    struct hd_sigv4_auth *out)
{
    int count;
    const char *authz = find_header(in->headers, in->nheaders, "authorization", &count);
    const char *q = in->query ? in->query : "";
    int presigned = query_has(q, "X-Amz-Algorithm") || query_has(q, "X-Amz-Credential") ||
                    query_has(q, "X-Amz-Signature");
    struct hd_sigv4_in copy = *in;

    memset(out, 0, sizeof(*out));
    copy.query = q;
    if (authz && count == 1 && !authz[strspn(authz, " \t")])
        authz = NULL; /* one empty Authorization: none at all (AWS, MinIO; s3-tests 403) */
    if (authz && presigned)
        return HD_EBADARG; /* S3: "Only one auth mechanism allowed" */
    if (authz)
        return count > 1 ? HD_EAUTHHDR : verify_header(&copy, authz, secret_for, ctx, out);
    if (presigned)
        return verify_query(&copy, secret_for, ctx, out);
    if (query_has(q, "AWSAccessKeyId"))
        return HD_EAUTHQUERY; /* SigV2 presigned URL: say so rather than go anonymous */
    return HD_DECLINED;
}

/* ---- streaming signatures ---- */

static void hmac_hex(const struct hd_sigv4_auth *a, const char *msg, size_t n, char out[65])
{
    unsigned char mac[32];

    hd_hmac_sha256(a->signing_key, 32, msg, n, mac);
    hd_hex(mac, 32, out);
}

void hd_sigv4_chunk_sig(const struct hd_sigv4_auth *a, const char prev_sig[65],
                        const unsigned char chunk_sha256[32], char out[65])
{
    char msg[128 + HD_SIGV4_SCOPE_MAX + 3 * 65], hx[65];
    int n;

    hd_hex(chunk_sha256, 32, hx);
    n = snprintf(msg, sizeof(msg), ALGO "-PAYLOAD\n%.16s\n%s\n%.64s\n%s\n%s", a->amz_date, a->scope,
                 prev_sig, empty_sha256_hex, hx);
    hmac_hex(a, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, out);
}

void hd_sigv4_trailer_sig(const struct hd_sigv4_auth *a, const char prev_sig[65],
                          const unsigned char trailer_sha256[32], char out[65])
{
    char msg[128 + HD_SIGV4_SCOPE_MAX + 2 * 65], hx[65];
    int n;

    hd_hex(trailer_sha256, 32, hx);
    n = snprintf(msg, sizeof(msg), ALGO "-TRAILER\n%.16s\n%s\n%.64s\n%s", a->amz_date, a->scope,
                 prev_sig, hx);
    hmac_hex(a, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, out);
}

/* ---- signing ---- */

struct name_ref {
    const char *s;
};

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_ref *)a)->s, ((const struct name_ref *)b)->s);
}

static int token_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!is_tchar(*s))
            return 0;
    return 1;
}

/* Lowercased, sorted, de-duplicated header names joined with ';' into out. */
static int build_signed_headers(const struct hd_kv *h, size_t n, struct hd_buf *out)
{
    struct hd_buf s;
    size_t *off = NULL;
    struct name_ref *names = NULL;
    int rc = -ENOMEM;

    hd_buf_init(&s);
    if (n == 0)
        return HD_EBADARG;
    off = malloc(n * sizeof(*off));
    names = malloc(n * sizeof(*names));
    if (!off || !names)
        goto out;
    for (size_t i = 0; i < n; i++) {
        rc = HD_EBADARG;
        if (!h[i].k || !token_ok(h[i].k))
            goto out;
        off[i] = s.len;
        for (const char *p = h[i].k; *p; p++) {
            char c = lower(*p);
            hd_buf_append(&s, &c, 1);
        }
        hd_buf_append(&s, "", 1);
    }
    rc = -ENOMEM;
    if (s.oom)
        goto out;
    for (size_t i = 0; i < n; i++)
        names[i].s = s.data + off[i];
    qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i && strcmp(names[i].s, names[i - 1].s) == 0)
            continue;
        hd_buf_printf(out, "%s%s", i ? ";" : "", names[i].s);
    }
    rc = out->oom ? -ENOMEM : (signed_headers_ok(out->data) ? 0 : HD_EBADARG);
out:
    free(names);
    free(off);
    hd_buf_cleanup(&s);
    return rc;
}

/* Signs the canonical request of (in, query, sh, payload): sig gets the hex signature and
 * a (never NULL here) the scope and signing key. */
static int sign_common(const struct hd_sigv4_sign_in *in, const char *query, const char *sh,
                       const char *payload, int presigned, struct hd_sigv4_auth *a)
{
    struct hd_sigv4_creq c = {in->method,   in->path, query,   in->headers,
                              in->nheaders, sh,       payload, presigned};
    struct hd_buf creq, sts;
    char date8[9];
    int n, rc;

    memset(a, 0, sizeof(*a));
    if (!in->amz_date || parse_amz_date(in->amz_date, strlen(in->amz_date), &a->date) < 0 ||
        !in->region || !in->service || !in->secret)
        return HD_EBADARG;
    memcpy(a->amz_date, in->amz_date, 17);
    memcpy(date8, in->amz_date, 8);
    date8[8] = '\0';
    n = snprintf(a->scope, sizeof(a->scope), "%s/%s/%s/aws4_request", date8, in->region,
                 in->service);
    if (n < 0 || (size_t)n >= sizeof(a->scope) ||
        snprintf(a->region, sizeof(a->region), "%s", in->region) >= (int)sizeof(a->region) ||
        snprintf(a->service, sizeof(a->service), "%s", in->service) >= (int)sizeof(a->service))
        return HD_EBADARG;
    hd_sigv4_signing_key(in->secret, date8, in->region, in->service, a->signing_key);
    hd_buf_init(&creq);
    hd_buf_init(&sts);
    rc = hd_sigv4_canonical_request(&c, &creq);
    if (rc == 0)
        rc = hd_sigv4_string_to_sign(a->amz_date, a->scope, creq.data, creq.len, &sts);
    if (rc == 0)
        hmac_hex(a, sts.data, sts.len, a->signature);
    hd_buf_cleanup(&sts);
    hd_buf_cleanup(&creq);
    return rc;
}

int hd_sigv4_sign(const struct hd_sigv4_sign_in *in, struct hd_buf *authz_out,
                  struct hd_sigv4_auth *auth_out)
{
    struct hd_sigv4_auth a;
    struct hd_buf sh;
    const char *payload = in->payload_hash;
    int rc, count;

    if (!in->access_key || !token_ok(in->access_key))
        return HD_EBADARG;
    if (!payload)
        payload = find_header(in->headers, in->nheaders, "x-amz-content-sha256", &count);
    if (!payload)
        payload = empty_sha256_hex;
    hd_buf_init(&sh);
    rc = build_signed_headers(in->headers, in->nheaders, &sh);
    if (rc == 0)
        rc = sign_common(in, in->query, sh.data, payload, 0, &a);
    if (rc == 0)
        rc = hd_buf_printf(authz_out, ALGO " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                           in->access_key, a.scope, sh.data, a.signature);
    if (rc == 0 && auth_out) {
        snprintf(a.access_key, sizeof(a.access_key), "%s", in->access_key);
        if (classify_payload(payload, &a.payload, a.payload_sha256) < 0)
            a.payload = HD_PL_UNSIGNED; /* a caller-chosen line we do not model */
        *auth_out = a;
    }
    OPENSSL_cleanse(&a, sizeof(a));
    hd_buf_cleanup(&sh);
    return rc;
}

int hd_sigv4_presign(const struct hd_sigv4_sign_in *in, struct hd_buf *query_out)
{
    struct hd_sigv4_auth a;
    struct hd_buf sh, q, cred;
    int rc;

    if (!in->access_key || !token_ok(in->access_key) || in->expires < 1 ||
        in->expires > HD_SIGV4_MAX_EXPIRES || !in->amz_date || strlen(in->amz_date) != 16)
        return HD_EBADARG;
    hd_buf_init(&sh);
    hd_buf_init(&q);
    hd_buf_init(&cred);
    rc = build_signed_headers(in->headers, in->nheaders, &sh);
    if (rc < 0)
        goto out;
    if (in->query && *in->query)
        hd_buf_printf(&q, "%s&", in->query);
    hd_buf_printf(&cred, "%s/%.8s/%s/%s/aws4_request", in->access_key, in->amz_date,
                  in->region ? in->region : "", in->service ? in->service : "");
    hd_buf_puts(&q, "X-Amz-Algorithm=" ALGO "&X-Amz-Credential=");
    uri_encode(&q, cred.data ? cred.data : "", cred.len, 0);
    hd_buf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%lu&X-Amz-SignedHeaders=", in->amz_date,
                  in->expires);
    uri_encode(&q, sh.data, sh.len, 0);
    if (in->security_token) {
        hd_buf_puts(&q, "&X-Amz-Security-Token=");
        uri_encode(&q, in->security_token, strlen(in->security_token), 0);
    }
    rc = -ENOMEM;
    if (q.oom || cred.oom)
        goto out;
    rc = sign_common(in, q.data, sh.data, in->payload_hash ? in->payload_hash : UNSIGNED_PAYLOAD, 1,
                     &a);
    if (rc == 0)
        rc = hd_buf_printf(query_out, "%s&X-Amz-Signature=%s", q.data, a.signature);
    OPENSSL_cleanse(&a, sizeof(a));
out:
    hd_buf_cleanup(&cred);
    hd_buf_cleanup(&q);
    hd_buf_cleanup(&sh);
    return rc;
}
