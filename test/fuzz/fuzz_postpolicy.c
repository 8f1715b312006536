/* libFuzzer driver for POST Object's form check (common/postpolicy). The input's first byte
 * is a mode (bit 0: auth on; bit 1: the driver signs the form with SigV2, bit 2: with SigV4;
 * bit 3: as the read-only key). The rest is split on '\n' into lines (empty ones skipped):
 * "name=value" a field (no '=': an empty value; repeats join), "+more" more of the last
 * field's value, "@name" the file's filename, and "{...}" a raw policy document that the
 * driver base64-encodes into the policy field, so the JSON parser is reached ("policy=..."
 * is taken as sent). The signatures cover the final policy field, so the policy check is
 * reached with auth on too. hd_post_check runs at a fixed time for a fixed bucket; its
 * answer must keep the contract of postpolicy.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cksum.h"
#include "common/errors.h"
#include "common/keys.h"
#include "common/postpolicy.h"
#include "common/sigv2.h"
#include "common/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEYSPEC "AK:sk,AKRO:skro:ro,AKB:skb:b1=ro;b2=rw"
#define NOW 1746100800 /* 2025-05-01T12:00:00Z */
#define DAY "20250501"
#define BUCKET "b1"
#define MAXLINES 64

static void add(struct hd_post_form *f, const char *name, const char *v, size_t n, int append)
{
    if (hd_post_form_add(f, name, v, n, append) < 0)
        return; /* -ENOMEM: the form stays as it was */
}

static void add_s(struct hd_post_form *f, const char *name, const char *v)
{
    add(f, name, v, strlen(v), 0);
}

/* The signature fields for the policy field as it now is. */
static void sign(struct hd_post_form *f, int mode)
{
    const char *pol = hd_post_form_get(f, "policy");
    const char *ak = mode & 8 ? "AKRO" : "AK", *sk = mode & 8 ? "skro" : "sk";

    if (!pol)
        pol = "";
    if (mode & 2) {
        char sig[HD_SIGV2_SIG_LEN + 1];
        hd_sigv2_sign(sk, pol, strlen(pol), sig);
        add_s(f, "AWSAccessKeyId", ak);
        add_s(f, "signature", sig);
    }
    if (mode & 4) {
        unsigned char key[32], mac[32];
        char hx[65], cred[64];
        hd_sigv4_signing_key(sk, DAY, "us-east-1", "s3", key);
        hd_hmac_sha256(key, sizeof(key), pol, strlen(pol), mac);
        hd_hex(mac, sizeof(mac), hx);
        snprintf(cred, sizeof(cred), "%s/" DAY "/us-east-1/s3/aws4_request", ak);
        add_s(f, "x-amz-algorithm", "AWS4-HMAC-SHA256");
        add_s(f, "x-amz-credential", cred);
        add_s(f, "x-amz-date", DAY "T120000Z");
        add_s(f, "x-amz-signature", hx);
    }
}

/* Traps unless (rc, ok, msg) keep hd_post_check's contract. */
static void check(int rc, const struct hd_post_form *f, const struct hd_keys *ks,
                  const struct hd_post_ok *ok, const char *msg, size_t msglen)
{
    if (!memchr(msg, '\0', msglen) || !memchr(ok->access, '\0', sizeof(ok->access)))
        __builtin_trap();
    if (rc < 0) {
        if (rc != -ENOMEM && rc != HD_EBADARG && rc != HD_EMISSINGAUTH && rc != HD_EBADSIG &&
            rc != HD_ENOACCESSKEY && rc != HD_EACCESS && rc != HD_EPOLICY)
            __builtin_trap();
        if (ok->key || (rc != -ENOMEM && !msg[0]))
            __builtin_trap();
        return;
    }
    if (rc != 0 || !ok->key || !hd_post_form_get(f, "key") ||
        strcmp(ok->key, hd_post_form_get(f, "key")) != 0)
        __builtin_trap();
    if (ks->n == 0) {
        if (ok->access[0])
            __builtin_trap();
    } else {
        const struct hd_key *k = hd_keys_find(ks, ok->access);
        /* a signed form: a known key that may write the bucket, with a policy */
        if (!k || hd_key_allows(k, BUCKET, 1) != 0 || !hd_post_form_get(f, "policy"))
            __builtin_trap();
    }
    /* no policy: no limits */
    if (!hd_post_form_get(f, "policy") && (ok->min_len != 0 || ok->max_len != UINT64_MAX))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hd_post_form f = {0};
    struct hd_keys ks = {0};
    struct hd_post_ok ok;
    char *buf, msg[256];
    size_t nl = 0;
    int mode, rc;

    if (size < 1)
        return 0;
    mode = data[0];
    if (!(buf = malloc(size))) /* the lines, NUL-terminated in place of their '\n' */
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    for (char *p = buf, *end = buf + size - 1; p <= end && nl < MAXLINES; nl++) {
        char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n;
        if (!e)
            e = end;
        *e = '\0';
        n = (size_t)(e - p);
        if (n == 0) {
            /* an empty line: nothing */
        } else if (*p == '{') {
            size_t max = (n + 2) / 3 * 4 + 1;
            char *pol = malloc(max);
            if (pol && hd_b64_encode((const unsigned char *)p, n, pol, max) == 0)
                add_s(&f, "policy", pol);
            free(pol);
        } else if (*p == '+') {
            add(&f, "", p + 1, n - 1, 1);
        } else if (*p == '@') {
            free(f.filename);
            f.filename = strndup(p + 1, n - 1);
        } else {
            char *eq = memchr(p, '=', n);
            if (eq) {
                *eq = '\0';
                add(&f, p, eq + 1, (size_t)(e - eq - 1), 0);
            } else {
                add(&f, p, "", 0, 0);
            }
        }
        p = e + 1;
    }
    free(buf);
    for (size_t i = 0; i < f.n; i++) /* every field is found by its name, in any case */
        if (!hd_post_form_get(&f, f.v[i].name) || f.v[i].value[f.v[i].vlen] != '\0')
            __builtin_trap();
    sign(&f, mode);

    if ((mode & 1) && hd_keys_parse(&ks, KEYSPEC) < 0)
        __builtin_trap();
    {
        struct hd_post_in in = {BUCKET, NOW, &ks};
        memset(msg, 'x', sizeof(msg));
        rc = hd_post_check(&f, &in, &ok, msg, sizeof(msg));
        check(rc, &f, &ks, &ok, msg, sizeof(msg));
    }
    hd_post_ok_cleanup(&ok);
    hd_post_form_cleanup(&f);
    hd_keys_cleanup(&ks);
    return 0;
}
