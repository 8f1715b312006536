#include "common/tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "common/errors.h"

#define MAX_CHAIN 8
#define MAX_PEM (1 << 20)

/* One loaded set of credentials. A handshake may still use a set after a reload replaced
 * it (GnuTLS keeps the pointers the callback returned), so every set lives until
 * hd_tls_free: a reload costs a few kilobytes. */
struct creds {
    gnutls_pcert_st pc[MAX_CHAIN];
    unsigned npc;
    gnutls_privkey_t key;
    X509_STORE *store; /* the CA, or NULL */
    char *cert_pem, *key_pem, *ca_pem;
    size_t cert_len, key_len, ca_len;
    char desc[512];
    struct creds *older;
};

struct hd_tls {
    char *cert, *key, *ca; /* file names */
    int client_auth;
    int no_verify_host;
    _Atomic(struct creds *) cur;
};

static _Atomic(struct hd_tls *) g_tls;

static char *slurp(const char *path, size_t *len, char *err, size_t errlen, const char *what)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0;

    if (!f) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    if (!(b = malloc(MAX_PEM + 1)) || (n = fread(b, 1, MAX_PEM + 1, f)) > MAX_PEM || ferror(f)) {
        snprintf(err, errlen, "%s %s: %s", what, path,
                 !b            ? "out of memory"
                 : n > MAX_PEM ? "larger than 1 MiB"
                               : "read error");
        free(b);
        b = NULL;
    } else {
        b[n] = '\0';
        *len = n;
    }
    fclose(f);
    return b;
}

static void creds_free(struct creds *c)
{
    unsigned i;

    if (!c)
        return;
    for (i = 0; i < c->npc; i++)
        gnutls_pcert_deinit(&c->pc[i]);
    if (c->key)
        gnutls_privkey_deinit(c->key);
    X509_STORE_free(c->store);
    free(c->cert_pem);
    if (c->key_pem)
        OPENSSL_cleanse(c->key_pem, c->key_len);
    free(c->key_pem);
    free(c->ca_pem);
    free(c);
}

/* Every certificate of a PEM text, in order (leaf first). NULL when there is none. */
static STACK_OF(X509) * pem_certs(const char *pem, size_t len)
{
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    STACK_OF(X509) *sk = sk_X509_new_null();
    X509 *x;

    while (b && sk && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)))
        if (!sk_X509_push(sk, x)) {
            X509_free(x);
            break;
        }
    ERR_clear_error(); /* the end of the text reads as an error */
    BIO_free(b);
    if (sk && sk_X509_num(sk) == 0) {
        sk_X509_free(sk);
        sk = NULL;
    }
    return sk;
}

static X509_STORE *pem_store(const char *pem, size_t len)
{
    STACK_OF(X509) *sk = pem_certs(pem, len);
    X509_STORE *st = sk ? X509_STORE_new() : NULL;
    int i;

    for (i = 0; st && i < sk_X509_num(sk); i++)
        if (!X509_STORE_add_cert(st, sk_X509_value(sk, i))) {
            X509_STORE_free(st);
            st = NULL;
        }
    sk_X509_pop_free(sk, X509_free);
    return st;
}

/* leaf with the intermediates in chain (may be NULL) against store; purpose 0 = any. */
static int verify(X509_STORE *store, X509 *leaf, STACK_OF(X509) * chain, int purpose,
                  const char **why)
{
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok;

    if (!ctx) {
        *why = "out of memory";
        return HD_EACCESS;
    }
    ok = X509_STORE_CTX_init(ctx, store, leaf, chain) == 1 &&
         (!purpose || X509_STORE_CTX_set_purpose(ctx, purpose) == 1) && X509_verify_cert(ctx) == 1;
    if (!ok)
        *why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    X509_STORE_CTX_free(ctx);
    ERR_clear_error();
    return ok ? 0 : HD_EACCESS;
}

int hd_tls_verify_pem(const char *chain_pem, size_t chain_len, const char *ca_pem, size_t ca_len,
                      const char **why)
{
    STACK_OF(X509) *sk = pem_certs(chain_pem, chain_len);
    X509_STORE *st = pem_store(ca_pem, ca_len);
    int rc;

    *why = !sk ? "no certificate" : !st ? "no CA certificate" : NULL;
    if (*why) {
        rc = HD_EACCESS;
    } else {
        X509 *leaf = sk_X509_shift(sk);
        rc = verify(st, leaf, sk, 0, why);
        X509_free(leaf);
    }
    sk_X509_pop_free(sk, X509_free);
    X509_STORE_free(st);
    return rc;
}

static void describe(X509 *x, char *buf, size_t len)
{
    char subj[256];
    BIO *b = BIO_new(BIO_s_mem());
    char *p = NULL;
    long n = 0;

    X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
    if (b && ASN1_TIME_print(b, X509_get0_notAfter(x)) == 1)
        n = BIO_get_mem_data(b, &p);
    snprintf(buf, len, "%s, not after %.*s", subj, (int)(p ? n : 1), p ? p : "?");
    BIO_free(b);
}

/* Loads and checks the three files of t into a new set. */
static struct creds *load(const struct hd_tls *t, char *err, size_t errlen)
{
    struct creds *c = calloc(1, sizeof(*c));
    STACK_OF(X509) *sk = NULL;
    X509 *leaf = NULL;
    EVP_PKEY *pk = NULL;
    BIO *b = NULL;
    gnutls_datum_t d;
    const char *why;
    int ok = 0, rc;

    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(c->cert_pem = slurp(t->cert, &c->cert_len, err, errlen, "tls.cert")) ||
        !(c->key_pem = slurp(t->key, &c->key_len, err, errlen, "tls.key")) ||
        (*t->ca && !(c->ca_pem = slurp(t->ca, &c->ca_len, err, errlen, "tls.ca"))))
        goto out;
    if (!(sk = pem_certs(c->cert_pem, c->cert_len))) {
        snprintf(err, errlen, "tls.cert %s holds no PEM certificate", t->cert);
        goto out;
    }
    leaf = sk_X509_shift(sk);
    if (!(b = BIO_new_mem_buf(c->key_pem, (int)c->key_len)) ||
        !(pk = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL))) {
        snprintf(err, errlen, "tls.key %s holds no PEM private key (or it is encrypted)", t->key);
        goto out;
    }
    if (X509_check_private_key(leaf, pk) != 1) {
        snprintf(err, errlen, "tls.key %s does not belong to the certificate in tls.cert %s",
                 t->key, t->cert);
        goto out;
    }
    if (c->ca_pem) {
        if (!(c->store = pem_store(c->ca_pem, c->ca_len))) {
            snprintf(err, errlen, "tls.ca %s holds no PEM certificate", t->ca);
            goto out;
        }
        if (verify(c->store, leaf, sk, t->client_auth ? X509_PURPOSE_SSL_CLIENT : 0, &why) < 0) {
            snprintf(err, errlen, "tls.cert %s does not verify against tls.ca %s%s: %s", t->cert,
                     t->ca, t->client_auth ? " as a client certificate (tls.client_auth)" : "",
                     why);
            goto out;
        }
    }
    describe(leaf, c->desc, sizeof(c->desc));
    /* the same bytes for GnuTLS, which serves them */
    c->npc = MAX_CHAIN;
    d.data = (unsigned char *)c->cert_pem;
    d.size = (unsigned)c->cert_len;
    if ((rc = gnutls_pcert_list_import_x509_raw(c->pc, &c->npc, &d, GNUTLS_X509_FMT_PEM, 0)) < 0) {
        c->npc = 0;
        snprintf(err, errlen, "tls.cert %s: %s (at most %d certificates)", t->cert,
                 gnutls_strerror(rc), MAX_CHAIN);
        goto out;
    }
    d.data = (unsigned char *)c->key_pem;
    d.size = (unsigned)c->key_len;
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "tls.key %s: %s", t->key, gnutls_strerror(rc));
        goto out;
    }
    ok = 1;
out:
    ERR_clear_error();
    BIO_free(b);
    EVP_PKEY_free(pk);
    X509_free(leaf);
    sk_X509_pop_free(sk, X509_free);
    if (!ok) {
        creds_free(c);
        c = NULL;
    }
    return c;
}

void hd_tls_free(struct hd_tls *t)
{
    struct creds *c, *n;

    if (!t)
        return;
    for (c = atomic_load(&t->cur); c; c = n) {
        n = c->older;
        creds_free(c);
    }
    free(t->cert);
    free(t->key);
    free(t->ca);
    free(t);
}

int hd_tls_new(const char *cert, const char *key, const char *ca, int client_auth,
               struct hd_tls **out, char *err, size_t errlen)
{
    struct hd_tls *t = calloc(1, sizeof(*t));
    struct creds *c;

    *out = NULL;
    if (!t || !(t->cert = strdup(cert ? cert : "")) || !(t->key = strdup(key ? key : "")) ||
        !(t->ca = strdup(ca ? ca : ""))) {
        hd_tls_free(t);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    t->client_auth = client_auth;
    if (!*t->cert || !*t->key || (client_auth && !*t->ca)) {
        snprintf(err, errlen, "%s",
                 !*t->cert || !*t->key ? "TLS needs both tls.cert and tls.key"
                                       : "tls.client_auth needs tls.ca (the CA of the nodes)");
        hd_tls_free(t);
        return -EINVAL;
    }
    if (!(c = load(t, err, errlen))) {
        hd_tls_free(t);
        return -EINVAL;
    }
    atomic_store(&t->cur, c);
    *out = t;
    return 0;
}

int hd_tls_reload(struct hd_tls *t, char *err, size_t errlen)
{
    struct creds *c = load(t, err, errlen);

    if (!c)
        return -EINVAL;
    c->older = atomic_load(&t->cur);
    atomic_store(&t->cur, c);
    return 0;
}

void hd_tls_verify_host(struct hd_tls *t, int on)
{
    t->no_verify_host = !on;
}

void hd_tls_describe(const struct hd_tls *t, char *buf, size_t len)
{
    struct creds *c = t ? atomic_load(&((struct hd_tls *)t)->cur) : NULL;

    snprintf(buf, len, "%s", c ? c->desc : "TLS off");
}

void hd_tls_use(struct hd_tls *t)
{
    atomic_store(&g_tls, t);
}

int hd_tls_on(void)
{
    return atomic_load(&g_tls) != NULL;
}

int hd_tls_client_auth(void)
{
    struct hd_tls *t = atomic_load(&g_tls);

    return t && t->client_auth;
}

const char *hd_tls_scheme(void)
{
    return hd_tls_on() ? "https" : "http";
}

static struct creds *current(void)
{
    struct hd_tls *t = atomic_load(&g_tls);

    return t ? atomic_load(&t->cur) : NULL;
}

/* gnutls_certificate_retrieve_function2: what GnuTLS sends in this handshake. */
static int cert_cb(gnutls_session_t s, const gnutls_datum_t *req_ca_rdn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    struct creds *c = current();

    (void)s;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    if (!c)
        return -1;
    *pcert = c->pc;
    *pcert_length = c->npc;
    *privkey = c->key;
    return 0;
}

void *hd_tls_mhd_cert_callback(void)
{
    static gnutls_certificate_retrieve_function2 *fn = cert_cb;

    return (void *)fn;
}

const char *hd_tls_mhd_trust(const struct hd_tls *t)
{
    struct creds *c = atomic_load(&((struct hd_tls *)t)->cur);

    return t->client_auth && c ? c->ca_pem : NULL;
}

/* What a connection's client certificate was found to be, and against which set. */
struct peer_memo {
    struct creds *with;
    int ok;
    const char *why; /* static text or OpenSSL's (static) error strings */
};

void *hd_tls_conn_new(void)
{
    return calloc(1, sizeof(struct peer_memo));
}

void hd_tls_conn_free(void *ctx)
{
    free(ctx);
}

static int peer_check(struct MHD_Connection *conn, struct creds *c, const char **why);

int hd_tls_peer_ok(struct MHD_Connection *conn, const char **why)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct peer_memo *m = ci ? ci->socket_context : NULL;
    struct creds *c = current();
    const char *dummy;
    int ok;

    if (!why)
        why = &dummy;
    if (m && c && m->with == c) { /* TLS 1.3: the peer cannot change within a connection */
        *why = m->why;
        return m->ok;
    }
    ok = peer_check(conn, c, why);
    if (m && c && ok >= 0) {
        m->with = c;
        m->ok = ok;
        m->why = *why;
    }
    return ok;
}

static int peer_check(struct MHD_Connection *conn, struct creds *c, const char **why)
{
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION) : NULL;
    const gnutls_datum_t *certs;
    STACK_OF(X509) *chain = NULL;
    X509 *leaf = NULL;
    unsigned n = 0, i;
    int ok = 0;

    *why = NULL;
    if (!ci || !ci->tls_session || !c)
        return -1;
    certs = gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n);
    if (!certs || n == 0) {
        *why = "no client certificate";
        return 0;
    }
    if (!c->store) {
        *why = "no CA to check client certificates against (tls.ca)";
        return 0;
    }
    for (i = 0; i < n; i++) {
        const unsigned char *p = certs[i].data;
        X509 *x = d2i_X509(NULL, &p, (long)certs[i].size);
        if (!x)
            break;
        if (i == 0) {
            leaf = x;
        } else if (!(chain || (chain = sk_X509_new_null())) || !sk_X509_push(chain, x)) {
            X509_free(x);
            break;
        }
    }
    if (!leaf || i < n)
        *why = "a client certificate does not parse";
    else
        ok = verify(c->store, leaf, chain, X509_PURPOSE_SSL_CLIENT, why) == 0;
    ERR_clear_error();
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    return ok;
}

void hd_tls_curl(void *curl)
{
    struct hd_tls *t = atomic_load(&g_tls);
    struct creds *c = current();
    struct curl_blob cb;
    CURL *e = curl;

    if (!c)
        return;
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, t->no_verify_host ? 0L : 2L);
    if (c->ca_pem) {
        cb.data = c->ca_pem;
        cb.len = c->ca_len;
        cb.flags = CURL_BLOB_COPY;
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &cb);
    }
    cb.data = c->cert_pem;
    cb.len = c->cert_len;
    cb.flags = CURL_BLOB_COPY;
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    cb.data = c->key_pem;
    cb.len = c->key_len;
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &cb);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
}
