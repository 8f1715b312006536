#include "common/awschunked.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/errors.h"

#define MAX_TRAILERS 64
#define TRAILER_SIG "x-amz-trailer-signature"

enum st { ST_SIZE, ST_DATA, ST_DATA_CR, ST_DATA_LF, ST_TRAILER, ST_DONE };

struct trailer {
    size_t name, value; /* offsets into tbuf */
};

struct hd_awschunked {
    enum st st;
    int err;              /* sticky */
    int check_sigs;       /* verify chunk-signature on every chunk */
    int trailers_ok;      /* trailer lines allowed */
    int want_trailer_sig; /* signed-trailer mode: x-amz-trailer-signature required */
    int got_trailer_sig;
    struct hd_sigv4_auth auth;
    char prev_sig[65];  /* previous signature in the chain (seed first) */
    char chunk_sig[65]; /* the current chunk's claimed signature, lowercase */
    EVP_MD_CTX *md;     /* current chunk's SHA-256, later the trailers' */
    uint64_t remaining; /* data bytes left in the current chunk */
    uint64_t decoded;
    size_t tbytes; /* trailer section bytes so far, CRLFs included */
    char line[HD_AWSCHUNKED_MAX_TRAILER + 2];
    size_t linelen;
    char tbuf[HD_AWSCHUNKED_MAX_TRAILER]; /* "name\0value\0" per trailer */
    size_t tlen;
    struct trailer tr[MAX_TRAILERS];
    int ntr;
};

static int hexval(char ch)
{
    unsigned char c = (unsigned char)ch;

    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

struct hd_awschunked *hd_awschunked_new(enum hd_payload mode, const struct hd_sigv4_auth *auth)
{
    int sig = mode == HD_PL_STREAMING_SIGNED || mode == HD_PL_STREAMING_SIGNED_TRAILER;
    struct hd_awschunked *d;

    if (sig && !auth)
        return NULL;
    d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->st = ST_SIZE;
    d->check_sigs = sig;
    d->trailers_ok = mode != HD_PL_STREAMING_SIGNED;
    d->want_trailer_sig = mode == HD_PL_STREAMING_SIGNED_TRAILER;
    if (sig) {
        d->md = EVP_MD_CTX_new();
        if (!d->md) {
            free(d);
            return NULL;
        }
        d->auth = *auth;
        memcpy(d->prev_sig, auth->signature, sizeof(d->prev_sig));
        d->prev_sig[64] = '\0';
    }
    return d;
}

void hd_awschunked_free(struct hd_awschunked *d)
{
    if (!d)
        return;
    EVP_MD_CTX_free(d->md);
    OPENSSL_cleanse(&d->auth, sizeof(d->auth));
    free(d);
}

uint64_t hd_awschunked_decoded(const struct hd_awschunked *d)
{
    return d->decoded;
}

const char *hd_awschunked_trailer(const struct hd_awschunked *d, const char *lname)
{
    for (int i = 0; i < d->ntr; i++)
        if (strcasecmp(d->tbuf + d->tr[i].name, lname) == 0)
            return d->tbuf + d->tr[i].value;
    return NULL;
}

/* ---- signatures ---- */

static int md_start(struct hd_awschunked *d)
{
    return EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) == 1 ? 0 : HD_EINTERNAL;
}

/* Checks the chunk just read against its chunk-signature and advances the chain. */
static int end_chunk(struct hd_awschunked *d)
{
    unsigned char h[32];
    unsigned int len = 0;
    char want[65];

    if (!d->check_sigs)
        return 0;
    if (EVP_DigestFinal_ex(d->md, h, &len) != 1 || len != 32)
        return HD_EINTERNAL;
    hd_sigv4_chunk_sig(&d->auth, d->prev_sig, h, want);
    if (CRYPTO_memcmp(want, d->chunk_sig, 64) != 0)
        return HD_EBADSIG;
    memcpy(d->prev_sig, d->chunk_sig, sizeof(d->prev_sig));
    return 0;
}

static int check_trailer_sig(struct hd_awschunked *d, const char *v, size_t n)
{
    unsigned char h[32];
    unsigned int len = 0;
    char want[65], got[65];

    if (n != 64)
        return HD_EBADSIG;
    for (size_t i = 0; i < 64; i++) {
        if (hexval(v[i]) < 0)
            return HD_EBADSIG;
        got[i] = (char)((v[i] >= 'A' && v[i] <= 'F') ? v[i] - 'A' + 'a' : v[i]);
    }
    if (EVP_DigestFinal_ex(d->md, h, &len) != 1 || len != 32)
        return HD_EINTERNAL;
    hd_sigv4_trailer_sig(&d->auth, d->prev_sig, h, want);
    return CRYPTO_memcmp(want, got, 64) == 0 ? 0 : HD_EBADSIG;
}

/* ---- lines ---- */

/* "hex-size[;ext[=value]]..." in d->line. Only chunk-signature is understood; other
 * extensions are ignored unless signatures are checked, where they are errors. */
static int parse_size_line(struct hd_awschunked *d, uint64_t *size)
{
    const char *l = d->line, *e = d->line + d->linelen;
    uint64_t v = 0;
    int nd = 0, have_sig = 0;

    for (; l < e && hexval(*l) >= 0; l++, nd++) {
        v = v * 16 + (uint64_t)hexval(*l);
        if (v > HD_AWSCHUNKED_MAX_CHUNK)
            return HD_ECHUNK;
    }
    if (nd == 0)
        return HD_ECHUNK;
    while (l < e) {
        const char *end, *eq;
        if (*l++ != ';')
            return HD_ECHUNK;
        end = memchr(l, ';', (size_t)(e - l));
        if (!end)
            end = e;
        eq = memchr(l, '=', (size_t)(end - l));
        if (!d->check_sigs) {
            /* unsigned modes ignore every extension, chunk-signature included */
        } else if (eq && eq - l == 15 && memcmp(l, "chunk-signature", 15) == 0) {
            if (have_sig++ || end - eq - 1 != 64)
                return HD_ECHUNK;
            for (int i = 0; i < 64; i++) {
                char c = eq[1 + i];
                if (hexval(c) < 0)
                    return HD_ECHUNK;
                d->chunk_sig[i] = (char)((c >= 'A' && c <= 'F') ? c - 'A' + 'a' : c);
            }
            d->chunk_sig[64] = '\0';
        } else {
            return HD_ECHUNK;
        }
        l = end;
    }
    if (d->check_sigs && !have_sig)
        return HD_EBADSIG; /* unsigned chunk in a signed stream */
    *size = v;
    return 0;
}

static int on_size_line(struct hd_awschunked *d)
{
    uint64_t size = 0;
    int rc = parse_size_line(d, &size);

    if (rc == 0 && d->check_sigs)
        rc = md_start(d);
    if (rc < 0)
        return rc;
    if (size > 0) {
        d->remaining = size;
        d->st = ST_DATA;
        return 0;
    }
    /* The final chunk: sign its empty data, then hash trailers for their signature. */
    rc = end_chunk(d);
    if (rc == 0 && d->want_trailer_sig)
        rc = md_start(d);
    d->st = ST_TRAILER;
    return rc;
}

static int end_trailers(struct hd_awschunked *d)
{
    if (d->want_trailer_sig && !d->got_trailer_sig)
        return HD_EBADSIG;
    d->st = ST_DONE;
    return 0;
}

static int token_char(char c)
{
    return (unsigned char)c > ' ' && (unsigned char)c < 0x7f && c != ':';
}

/* Stores "name:value" (name lowercased, value trimmed) for hd_awschunked_trailer. */
static int store_trailer(struct hd_awschunked *d, const char *l, size_t nl, const char *v,
                         size_t vl)
{
    struct trailer *t;

    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (d->ntr == MAX_TRAILERS || d->tlen + nl + vl + 2 > sizeof(d->tbuf))
        return HD_ECHUNK;
    t = &d->tr[d->ntr++];
    t->name = d->tlen;
    for (size_t i = 0; i < nl; i++)
        d->tbuf[d->tlen++] = (char)((l[i] >= 'A' && l[i] <= 'Z') ? l[i] - 'A' + 'a' : l[i]);
    d->tbuf[d->tlen++] = '\0';
    t->value = d->tlen;
    memcpy(d->tbuf + d->tlen, v, vl);
    d->tlen += vl;
    d->tbuf[d->tlen++] = '\0';
    return 0;
}

/* One trailer line in d->line; the blank line ends the section. The signature covers each
 * trailer line as sent, as "line\n". */
static int on_trailer_line(struct hd_awschunked *d)
{
    const char *l = d->line, *colon;
    size_t n = d->linelen, nl;

    if (n == 0)
        return end_trailers(d);
    d->tbytes += n + 2;
    if (d->tbytes > HD_AWSCHUNKED_MAX_TRAILER || !d->trailers_ok || d->got_trailer_sig)
        return HD_ECHUNK; /* too long, not allowed here, or after the signature */
    colon = memchr(l, ':', n);
    if (!colon || colon == l)
        return HD_ECHUNK;
    nl = (size_t)(colon - l);
    for (size_t i = 0; i < nl; i++)
        if (!token_char(l[i]))
            return HD_ECHUNK;
    if (nl == sizeof(TRAILER_SIG) - 1 && strncasecmp(l, TRAILER_SIG, nl) == 0) {
        d->got_trailer_sig = 1;
        return d->want_trailer_sig ? check_trailer_sig(d, colon + 1, n - nl - 1) : 0;
    }
    if (d->want_trailer_sig &&
        (EVP_DigestUpdate(d->md, l, n) != 1 || EVP_DigestUpdate(d->md, "\n", 1) != 1))
        return HD_EINTERNAL;
    return store_trailer(d, l, nl, colon + 1, n - nl - 1);
}

/* No CR or other control characters (tab aside) inside a line. */
static int line_clean(const struct hd_awschunked *d)
{
    for (size_t i = 0; i < d->linelen; i++)
        if ((unsigned char)d->line[i] < ' ' && d->line[i] != '\t')
            return 0;
    return 1;
}

/* Appends input up to and including '\n' to d->line (at most max bytes before CRLF).
 * *done is set once a whole line, CRLF stripped and NUL-terminated, is there. */
static int take_line(struct hd_awschunked *d, const char *in, size_t n, size_t max, size_t *used,
                     int *done)
{
    const char *nl = memchr(in, '\n', n);
    size_t content = nl ? (size_t)(nl - in) : n;

    *done = 0;
    *used = content + (nl ? 1 : 0);
    if (d->linelen + content > max + 1) /* +1: the CR */
        return HD_ECHUNK;
    memcpy(d->line + d->linelen, in, content);
    d->linelen += content;
    if (!nl)
        return 0;
    if (d->linelen == 0 || d->line[d->linelen - 1] != '\r')
        return HD_ECHUNK; /* bare LF */
    d->linelen--;
    if (!line_clean(d))
        return HD_ECHUNK;
    d->line[d->linelen] = '\0';
    *done = 1;
    return 0;
}

static int step_line(struct hd_awschunked *d, const char *in, size_t n, size_t *used)
{
    size_t max = d->st == ST_SIZE ? HD_AWSCHUNKED_MAX_LINE : HD_AWSCHUNKED_MAX_TRAILER;
    int done, rc;

    rc = take_line(d, in, n, max, used, &done);
    if (rc < 0 || !done)
        return rc;
    rc = d->st == ST_SIZE ? on_size_line(d) : on_trailer_line(d);
    d->linelen = 0;
    return rc;
}

static int step_data(struct hd_awschunked *d, const char *in, size_t n, size_t *used,
                     hd_awschunked_sink_fn sink, void *arg)
{
    size_t take = n < d->remaining ? n : (size_t)d->remaining;
    int rc;

    *used = take;
    if (d->check_sigs && EVP_DigestUpdate(d->md, in, take) != 1)
        return HD_EINTERNAL;
    d->remaining -= take;
    d->decoded += take;
    rc = sink ? sink(arg, in, take) : 0;
    if (rc < 0)
        return rc;
    if (d->remaining == 0) {
        d->st = ST_DATA_CR;
        return end_chunk(d);
    }
    return 0;
}

int hd_awschunked_feed(struct hd_awschunked *d, const char *in, size_t n,
                       hd_awschunked_sink_fn sink, void *arg)
{
    int rc = d->err;

    while (n > 0 && rc == 0) {
        size_t used = 1;
        switch (d->st) {
        case ST_SIZE:
        case ST_TRAILER:
            rc = step_line(d, in, n, &used);
            break;
        case ST_DATA:
            rc = step_data(d, in, n, &used, sink, arg);
            break;
        case ST_DATA_CR:
            rc = *in == '\r' ? 0 : HD_ECHUNK;
            d->st = ST_DATA_LF;
            break;
        case ST_DATA_LF:
            rc = *in == '\n' ? 0 : HD_ECHUNK;
            d->st = ST_SIZE;
            break;
        case ST_DONE:
            rc = HD_ECHUNK; /* bytes after the end */
            break;
        }
        in += used;
        n -= used;
    }
    d->err = rc;
    return rc;
}

int hd_awschunked_finish(struct hd_awschunked *d)
{
    int rc = d->err;

    if (rc == 0 && d->st == ST_TRAILER) {
        /* Body ended inside the trailer section: accept a missing blank line, and a last
         * trailer line without its CRLF. */
        if (d->linelen && d->line[d->linelen - 1] == '\r')
            d->linelen--;
        d->line[d->linelen] = '\0';
        if (!line_clean(d))
            rc = HD_ECHUNK;
        else if (d->linelen)
            rc = on_trailer_line(d);
        d->linelen = 0;
        if (rc == 0 && d->st == ST_TRAILER)
            rc = end_trailers(d);
    } else if (rc == 0 && d->st != ST_DONE) {
        rc = HD_EINCOMPLETEBODY;
    }
    d->err = rc;
    return rc;
}
