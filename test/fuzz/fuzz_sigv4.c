/* libFuzzer driver for SigV4 verification (common/sigv4). The input is split on '\n' into
 * method, path, query, Authorization value (empty: none) and "name:value" headers; it goes
 * through hd_sigv4_verify as is, and then a sign -> verify and presign -> verify round trip
 * on the same path, query and headers must succeed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define NOW 1369353600 /* 2013-05-24T00:00:00Z, the S3 documentation examples' time */
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
    static const char *const names[] = {"authorization", "x-amz-date", "date",
                                        "x-amz-content-sha256", "host"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(k, names[i]) == 0)
            return 1;
    return 0;
}

static void roundtrip(const char *method, const char *path, const char *query,
                      const struct hd_kv *h, size_t nh)
{
    struct hd_kv hh[MAXF + 4];
    struct hd_sigv4_auth a, v;
    struct hd_buf out;
    size_t n = 0;
    int rc;

    for (size_t i = 0; i < nh; i++)
        if (!special(h[i].k))
            hh[n++] = h[i];
    hh[n++] = (struct hd_kv){"Host", "example.com"};
    hh[n++] = (struct hd_kv){"X-Amz-Date", "20130524T000000Z"};
    /* A query that itself looks like auth would (rightly) change the verdict. */
    if (strstr(query, "X-Amz-") || strstr(query, "AWSAccessKeyId") || strchr(query, '%'))
        return;
    hd_buf_init(&out);
    {
        struct hd_sigv4_sign_in si = {method, path, query,       hh,   n,
                                      AK,     SK,   "us-east-1", "s3", "20130524T000000Z",
                                      NULL,   NULL, 300};
        rc = hd_sigv4_sign(&si, &out, &a);
        if (rc == 0) {
            struct hd_sigv4_in in = {method, path, query, hh, n + 1, NOW};
            hh[n] = (struct hd_kv){"Authorization", out.data};
            if (hd_sigv4_verify(&in, secret_for, NULL, &v) != 0 ||
                strcmp(v.signature, a.signature) != 0)
                __builtin_trap();
        }
        hd_buf_reset(&out);
        si.expires = 300;
        rc = hd_sigv4_presign(&si, &out);
        if (rc == 0) {
            struct hd_sigv4_in in = {method, path, out.data, hh, n, NOW + 10};
            if (hd_sigv4_verify(&in, secret_for, NULL, &v) != 0 || !v.presigned)
                __builtin_trap();
        }
    }
    hd_buf_cleanup(&out);
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
        int rc = hd_sigv4_verify(&in, secret_for, NULL, &a);
        if ((rc > 0 && rc != HD_DECLINED) || (rc == 0 && strlen(a.signature) != 64))
            __builtin_trap();
        /* an expired or not yet valid URL says when (for the error body) */
        if ((rc == HD_EEXPIRED || rc == HD_ENOTYET) &&
            (!a.date || a.expires_at != a.date + a.expires_in))
            __builtin_trap();
    }
    roundtrip(*f[0] ? f[0] : "GET", f[1], f[2], h + (*f[3] ? 1 : 0), nh - (*f[3] ? 1 : 0));
    free(buf);
    return 0;
}
