/* libFuzzer driver for SigV2 verification (common/sigv2). The input is split on '\n' into
 * method, path, query, Authorization value (empty: none) and "name:value" headers; it goes
 * through hd_sigv2_verify as is, and then a sign -> verify round trip in both forms (header
 * with a Date, and presigned query) over the same method, path, query and headers must
 * succeed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/sigv2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define NOW 1369353600 /* 2013-05-24T00:00:00Z */
#define DATE "Fri, 24 May 2013 00:00:00 GMT"
#define EXPIRES "1369357200"
#define MAXF 24

static int secret_for(void *ctx, const char *ak, char *secret, size_t max)
{
    (void)ctx;
    if (strcmp(ak, AK) != 0)
        return HD_ENOACCESSKEY;
    snprintf(secret, max, "%s", SK);
    return 0;
}

/* Headers the round trip sets itself or that change how verification reads the request. */
static int special(const char *k)
{
    return strcasecmp(k, "authorization") == 0 || strcasecmp(k, "date") == 0 ||
           strcasecmp(k, "x-amz-date") == 0;
}

/* Percent-encodes a base64 signature for the query ('+', '/', '='). */
static void enc_sig(const char *sig, struct hd_buf *out)
{
    for (; *sig; sig++) {
        if (*sig == '+')
            hd_buf_puts(out, "%2B");
        else if (*sig == '/')
            hd_buf_puts(out, "%2F");
        else if (*sig == '=')
            hd_buf_puts(out, "%3D");
        else
            hd_buf_append(out, sig, 1);
    }
}

static int excused(int pct, int rc)
{
    return pct && (rc == HD_EAUTHQUERY || rc == HD_EBADARG);
}

static void roundtrip(const char *method, const char *path, const char *query,
                      const struct hd_kv *h, size_t nh)
{
    struct hd_kv hh[MAXF + 2];
    struct hd_sigv4_auth a;
    struct hd_buf sts, q, authz;
    char sig[HD_SIGV2_SIG_LEN + 1];
    size_t n = 0;
    int rc, pct;

    /* A query that itself carries auth parameters would rightly change the verdict. With a
     * '%' they may hide behind an escape ("%41WSAccessKeyId"): only a refusal as malformed
     * or mixed is excused then, never a signature mismatch. */
    pct = strchr(query, '%') != NULL;
    if (strstr(query, "AWSAccessKeyId") || strstr(query, "Signature") || strstr(query, "Expires") ||
        strstr(query, "X-Amz-"))
        return;
    for (size_t i = 0; i < nh; i++)
        if (!special(h[i].k))
            hh[n++] = h[i];
    hd_buf_init(&sts);
    hd_buf_init(&q);
    hd_buf_init(&authz);

    /* Header form. */
    hh[n] = (struct hd_kv){"Date", DATE};
    {
        struct hd_sigv4_in in = {method, path, query, hh, n + 1, NOW};

        rc = hd_sigv2_string_to_sign(&in, NULL, &sts);
        if (rc == 0) {
            hd_sigv2_sign(SK, sts.data, sts.len, sig);
            hd_buf_printf(&authz, "AWS %s:%s", AK, sig);
            if (authz.oom)
                goto out;
            hh[n + 1] = (struct hd_kv){"Authorization", authz.data};
            in.nheaders = n + 2;
            rc = hd_sigv2_verify(&in, secret_for, NULL, &a);
            if (excused(pct, rc))
                goto out;
            if (rc != 0 || strcmp(a.access_key, AK) != 0 || a.presigned ||
                a.payload != HD_PL_UNSIGNED || a.date != NOW)
                __builtin_trap();
        } else if (rc != HD_EBADHEADER && rc != -ENOMEM) {
            __builtin_trap();
        }
    }

    /* Query form. */
    hd_buf_reset(&sts);
    {
        struct hd_sigv4_in in = {method, path, query, hh, n, NOW};

        rc = hd_sigv2_string_to_sign(&in, EXPIRES, &sts);
        if (rc == 0) {
            hd_sigv2_sign(SK, sts.data, sts.len, sig);
            hd_buf_printf(&q, "%s%sAWSAccessKeyId=%s&Expires=%s&Signature=", query,
                          *query ? "&" : "", AK, EXPIRES);
            enc_sig(sig, &q);
            if (q.oom)
                goto out;
            in.query = q.data;
            rc = hd_sigv2_verify(&in, secret_for, NULL, &a);
            if (excused(pct, rc))
                goto out;
            if (rc != 0 || !a.presigned || strcmp(a.access_key, AK) != 0)
                __builtin_trap();
            in.now = 1369357201;
            if (hd_sigv2_verify(&in, secret_for, NULL, &a) != HD_EEXPIRED)
                __builtin_trap();
        } else if (rc != HD_EBADHEADER && rc != -ENOMEM) {
            __builtin_trap();
        }
    }
out:
    hd_buf_cleanup(&authz);
    hd_buf_cleanup(&q);
    hd_buf_cleanup(&sts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *f[MAXF + 4];
    struct hd_kv h[MAXF + 1];
    struct hd_sigv4_auth a;
    size_t nf = 0, nh = 0;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (char *p = buf; nf < MAXF + 4;) {
        char *nl = strchr(p, '\n');
        f[nf++] = p;
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    while (nf < 4)
        f[nf++] = "";
    if (*f[3])
        h[nh++] = (struct hd_kv){"Authorization", f[3]};
    for (size_t i = 4; i < nf && nh < MAXF; i++) {
        char *colon = strchr(f[i], ':');
        if (!colon)
            continue;
        *colon = '\0';
        h[nh++] = (struct hd_kv){f[i], colon + 1};
    }
    {
        struct hd_sigv4_in in = {f[0], f[1], f[2], h, nh, NOW};
        int rc = hd_sigv2_verify(&in, secret_for, NULL, &a);

        if ((rc > 0 && rc != HD_DECLINED) ||
            memchr(a.access_key, '\0', sizeof(a.access_key)) == NULL)
            __builtin_trap();
        if (rc == HD_DECLINED && a.access_key[0])
            __builtin_trap();
    }
    roundtrip(*f[0] ? f[0] : "GET", f[1], f[2], h + (*f[3] ? 1 : 0), nh - (*f[3] ? 1 : 0));
    free(buf);
    return 0;
}
