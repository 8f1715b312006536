/* postpolicy: POST Object's form and policy check (see postpolicy.h). */
#include "common/postpolicy.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/s3resp.h"
#include "common/sigv2.h"
#include "common/sigv4.h"

/* A decoded policy document is at most the 20 KB AWS allows the fields before the file. */
#define POLICY_MAX (64u * 1024)

int hd_post_form_add(struct hd_post_form *f, const char *name, const char *data, size_t len,
                     int append)
{
    struct hd_post_field *x;
    char *v;

    if (!append) {
        size_t i;
        for (i = 0; i < f->n; i++) /* a repeated field: its values joined with "," */
            if (strcasecmp(f->v[i].name, name) == 0) {
                if (!(v = realloc(f->v[i].value, f->v[i].vlen + len + 2)))
                    return -ENOMEM;
                v[f->v[i].vlen++] = ',';
                f->last = i;
                goto copy;
            }
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 16;
            struct hd_post_field *nv = realloc(f->v, cap * sizeof(*nv));
            if (!nv)
                return -ENOMEM;
            f->v = nv;
            f->cap = cap;
        }
        x = &f->v[f->n];
        x->name = strdup(name);
        x->value = malloc(len + 1);
        x->vlen = 0;
        if (!x->name || !x->value) {
            free(x->name);
            free(x->value);
            return -ENOMEM;
        }
        f->n++;
        f->last = f->n - 1;
        v = x->value;
        memcpy(v, data, len);
        x->vlen = len;
        v[len] = '\0';
        return 0;
    copy:
        f->v[i].value = v;
        memcpy(v + f->v[i].vlen, data, len);
        f->v[i].vlen += len;
        v[f->v[i].vlen] = '\0';
        return 0;
    }
    if (!f->n)
        return hd_post_form_add(f, name, data, len, 0);
    x = &f->v[f->last];
    if (!(v = realloc(x->value, x->vlen + len + 1)))
        return -ENOMEM;
    memcpy(v + x->vlen, data, len);
    x->value = v;
    x->vlen += len;
    v[x->vlen] = '\0';
    return 0;
}

static struct hd_post_field *field(const struct hd_post_form *f, const char *name)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        if (strcasecmp(f->v[i].name, name) == 0)
            return &f->v[i];
    return NULL;
}

const char *hd_post_form_get(const struct hd_post_form *f, const char *name)
{
    struct hd_post_field *x = field(f, name);

    return x ? x->value : NULL;
}

void hd_post_form_cleanup(struct hd_post_form *f)
{
    size_t i;

    for (i = 0; i < f->n; i++) {
        free(f->v[i].name);
        free(f->v[i].value);
    }
    free(f->v);
    free(f->filename);
    memset(f, 0, sizeof(*f));
}

void hd_post_ok_cleanup(struct hd_post_ok *o)
{
    free(o->key);
    o->key = NULL;
}

__attribute__((format(printf, 4, 5))) static int fail(int code, char *msg, size_t msglen,
                                                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return code;
}

/* ${filename} in every field's value becomes the file's name (its last path segment, as a
 * browser on Windows may send the whole path). */
static int expand_filename(struct hd_post_form *f)
{
    const char *fn = f->filename ? f->filename : "", *s;
    size_t i, fl;

    if ((s = strrchr(fn, '/')))
        fn = s + 1;
    if ((s = strrchr(fn, '\\')))
        fn = s + 1;
    fl = strlen(fn);
    for (i = 0; i < f->n; i++) {
        struct hd_buf b;
        const char *v = f->v[i].value, *at;
        if (!strstr(v, "${filename}"))
            continue;
        hd_buf_init(&b);
        while ((at = strstr(v, "${filename}"))) {
            hd_buf_append(&b, v, (size_t)(at - v));
            hd_buf_append(&b, fn, fl);
            v = at + 11;
        }
        hd_buf_append(&b, v, f->v[i].value + f->v[i].vlen - v);
        if (b.oom || hd_buf_append(&b, "", 1) < 0) {
            hd_buf_cleanup(&b);
            return -ENOMEM;
        }
        free(f->v[i].value);
        f->v[i].value = b.data; /* the buffer is ours now */
        f->v[i].vlen = b.len - 1;
    }
    return 0;
}

/* Fields that no condition needs to name: the signature's own, the file, x-ignore-* (AWS),
 * and the checksums (s3-tests: a checksum is checked against the body, not the policy). */
static int exempt(const char *name)
{
    static const char *const v[] = {"awsaccesskeyid", "signature", "x-amz-signature",
                                    "policy",         "file",      NULL};
    size_t i;

    for (i = 0; v[i]; i++)
        if (strcasecmp(name, v[i]) == 0)
            return 1;
    return strncasecmp(name, "x-ignore-", 9) == 0 || strncasecmp(name, "x-amz-checksum-", 15) == 0;
}

/* A non-negative integer of a content-length-range: a JSON integer, or a string of digits. */
static int range_bound(const json_t *j, uint64_t *out)
{
    const char *s;
    char *end;

    if (json_is_integer(j)) {
        if (json_integer_value(j) < 0)
            return HD_EBADARG;
        *out = (uint64_t)json_integer_value(j);
        return 0;
    }
    if (!json_is_string(j) || !isdigit((unsigned char)*(s = json_string_value(j))))
        return HD_EBADARG;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return *end || errno ? HD_EBADARG : 0;
}

struct cond {
    int op; /* 0 eq, 1 starts-with, 2 range */
    const char *name;
    const char *value;
    const json_t *j; /* for the message */
};

/* Reads one condition into c: 0, or HD_EPOLICY with msg. */
static int cond_read(const json_t *j, struct cond *c, struct hd_post_ok *out, char *msg,
                     size_t msglen)
{
    memset(c, 0, sizeof(*c));
    c->j = j;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        if (json_object_size(j) != 1)
            return fail(HD_EPOLICY, msg, msglen,
                        "Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have "
                        "exactly one property specified.");
        json_object_foreach((json_t *)j, k, v)
        {
            if (!json_is_string(v))
                return fail(HD_EPOLICY, msg, msglen,
                            "Invalid Policy: Invalid Simple-Condition: value of %s must be a "
                            "string.",
                            k);
            c->name = k;
            c->value = json_string_value(v);
        }
        return 0;
    }
    if (json_is_array(j) && json_array_size(j) > 0 && json_is_string(json_array_get(j, 0))) {
        const char *op = json_string_value(json_array_get(j, 0));
        if (strcasecmp(op, "content-length-range") == 0) {
            uint64_t lo, hi;
            if (json_array_size(j) != 3 || range_bound(json_array_get(j, 1), &lo) < 0 ||
                range_bound(json_array_get(j, 2), &hi) < 0 || lo > hi)
                return fail(HD_EPOLICY, msg, msglen,
                            "Invalid Policy: Invalid content-length-range: it takes two "
                            "non-negative integers, the minimum first.");
            c->op = 2;
            if (lo > out->min_len)
                out->min_len = lo;
            if (hi < out->max_len)
                out->max_len = hi;
            return 0;
        }
        if (strcasecmp(op, "eq") == 0 || strcasecmp(op, "starts-with") == 0) {
            const json_t *n = json_array_get(j, 1), *v = json_array_get(j, 2);
            if (json_array_size(j) != 3 || !json_is_string(n) || !json_is_string(v) ||
                json_string_value(n)[0] != '$')
                return fail(HD_EPOLICY, msg, msglen,
                            "Invalid Policy: Invalid %s condition: it takes a \"$field\" and a "
                            "string.",
                            op);
            c->op = strcasecmp(op, "eq") == 0 ? 0 : 1;
            c->name = json_string_value(n) + 1;
            c->value = json_string_value(v);
            return 0;
        }
        return fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Invalid condition operator: %s.", op);
    }
    return fail(HD_EPOLICY, msg, msglen,
                "Invalid Policy: a condition is an object or an array with an operator.");
}

/* The value a condition is checked against: the URL's bucket, or the field ("" absent). */
static const char *cond_subject(const struct hd_post_form *f, const struct hd_post_in *in,
                                const char *name)
{
    const char *v;

    if (strcasecmp(name, "bucket") == 0)
        return in->bucket;
    v = hd_post_form_get(f, name);
    return v ? v : "";
}

static int cond_failed(const struct cond *c, char *msg, size_t msglen)
{
    char *txt = json_dumps(c->j, JSON_COMPACT | JSON_ENCODE_ANY);
    int rc = fail(HD_EACCESS, msg, msglen,
                  "Invalid according to Policy: Policy Condition failed: %s", txt ? txt : "");
    free(txt);
    return rc;
}

/* x-amz-credential: exactly ACCESS/YYYYMMDD/REGION/s3/aws4_request, of visible characters.
 * 0 or HD_EBADARG. */
static int credential_split(const char *cred, char ak[HD_SIGV4_AK_MAX], char d8[9], char region[64])
{
    const char *part[5], *p = cred;
    size_t len[5], i;

    for (p = cred; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return HD_EBADARG;
    p = cred;
    for (i = 0; i < 5; i++) {
        const char *e = i < 4 ? strchr(p, '/') : p + strlen(p);
        if (!e)
            return HD_EBADARG;
        part[i] = p;
        len[i] = (size_t)(e - p);
        p = e + 1;
    }
    if (len[0] == 0 || len[0] >= HD_SIGV4_AK_MAX || len[1] != 8 || len[2] == 0 || len[2] >= 64 ||
        len[3] != 2 || memcmp(part[3], "s3", 2) != 0 || len[4] != 12 ||
        memcmp(part[4], "aws4_request", 12) != 0)
        return HD_EBADARG;
    for (i = 0; i < 8; i++)
        if (!isdigit((unsigned char)part[1][i]))
            return HD_EBADARG;
    memcpy(ak, part[0], len[0]);
    ak[len[0]] = '\0';
    memcpy(d8, part[1], 8);
    d8[8] = '\0';
    memcpy(region, part[2], len[2]);
    region[len[2]] = '\0';
    return 0;
}

/* Whether the policy's signature is right: 0, or the code with msg. who gets the access key. */
static int signature_check(const struct hd_post_form *f, const struct hd_post_in *in,
                           const char *policy, char who[HD_SIGV4_AK_MAX], char *msg, size_t msglen)
{
    const char *v4alg = hd_post_form_get(f, "x-amz-algorithm");
    const char *ak = hd_post_form_get(f, "AWSAccessKeyId");
    const struct hd_key *k;

    if (v4alg) {
        const char *cred = hd_post_form_get(f, "x-amz-credential");
        const char *date = hd_post_form_get(f, "x-amz-date");
        const char *sig = hd_post_form_get(f, "x-amz-signature");
        char akbuf[HD_SIGV4_AK_MAX], d8[9], region[64], hx[65];
        unsigned char skey[32], mac[32];
        time_t t;
        if (strcmp(v4alg, "AWS4-HMAC-SHA256") != 0)
            return fail(HD_EBADARG, msg, msglen,
                        "Only AWS4-HMAC-SHA256 is supported for x-amz-algorithm, not '%s'.", v4alg);
        if (!cred || !date || !sig)
            return fail(HD_EBADARG, msg, msglen,
                        "Bucket POST must contain the fields x-amz-credential, x-amz-date and "
                        "x-amz-signature.");
        if (credential_split(cred, akbuf, d8, region) < 0)
            return fail(HD_EBADARG, msg, msglen,
                        "Invalid x-amz-credential: '%s' (ACCESS/YYYYMMDD/REGION/s3/aws4_request).",
                        cred);
        if (hd_amz_date_parse(date, &t) < 0 || strncmp(date, d8, 8) != 0)
            return fail(HD_EBADARG, msg, msglen,
                        "Invalid x-amz-date: '%s' (YYYYMMDDTHHMMSSZ, of the credential's day).",
                        date);
        if (!(k = hd_keys_find(in->keys, akbuf)))
            return fail(HD_ENOACCESSKEY, msg, msglen,
                        "The AWS Access Key Id you provided does not exist in our records.");
        hd_sigv4_signing_key(k->secret, d8, region, "s3", skey);
        hd_hmac_sha256(skey, 32, policy, strlen(policy), mac);
        OPENSSL_cleanse(skey, sizeof(skey));
        hd_hex(mac, 32, hx);
        if (strlen(sig) != 64 || CRYPTO_memcmp(hx, sig, 64) != 0)
            return fail(HD_EBADSIG, msg, msglen,
                        "The request signature we calculated does not match the signature you "
                        "provided. Check your key and signing method.");
        snprintf(who, HD_SIGV4_AK_MAX, "%s", akbuf);
        return 0;
    }
    {
        const char *sig = hd_post_form_get(f, "signature");
        char want[HD_SIGV2_SIG_LEN + 1];
        if (!ak)
            return fail(HD_EBADARG, msg, msglen,
                        "Bucket POST must contain a field named 'AWSAccessKeyId'.  If it is "
                        "specified, please check the order of the fields.");
        if (!sig)
            return fail(HD_EBADARG, msg, msglen,
                        "Bucket POST must contain a field named 'Signature'.  If it is specified, "
                        "please check the order of the fields.");
        if (!(k = hd_keys_find(in->keys, ak)))
            return fail(HD_ENOACCESSKEY, msg, msglen,
                        "The AWS Access Key Id you provided does not exist in our records.");
        hd_sigv2_sign(k->secret, policy, strlen(policy), want);
        if (strlen(sig) != HD_SIGV2_SIG_LEN || CRYPTO_memcmp(want, sig, HD_SIGV2_SIG_LEN) != 0)
            return fail(HD_EBADSIG, msg, msglen,
                        "The request signature we calculated does not match the signature you "
                        "provided. Check your key and signing method.");
        snprintf(who, HD_SIGV4_AK_MAX, "%s", ak);
        return 0;
    }
}

/* The policy document's conditions against the form: 0, or the code with msg. */
static int policy_check(const struct hd_post_form *f, const struct hd_post_in *in,
                        const char *policy, struct hd_post_ok *out, char *msg, size_t msglen)
{
    unsigned char *doc = NULL;
    size_t dlen = 0, i, n;
    json_t *j = NULL, *conds, *exp;
    struct cond *cv = NULL;
    int64_t t_ms;
    int rc;

    n = strlen(policy);
    if (n == 0 || n > POLICY_MAX * 4 / 3 + 4 || !(doc = malloc(n)) ||
        hd_b64_decode(policy, n, doc, n, &dlen) < 0) {
        rc = fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Invalid Base64 Encoding.");
        goto out;
    }
    j = json_loadb((const char *)doc, dlen, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(j)) {
        rc = fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Invalid JSON.");
        goto out;
    }
    exp = json_object_get(j, "expiration");
    if (!json_is_string(exp)) {
        rc = fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Policy missing expiration.");
        goto out;
    }
    if (hd_s3resp_parse_iso8601(json_string_value(exp), &t_ms) < 0) {
        rc = fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Invalid 'expiration' value: '%s'",
                  json_string_value(exp));
        goto out;
    }
    conds = json_object_get(j, "conditions");
    if (!json_is_array(conds)) {
        rc = fail(HD_EPOLICY, msg, msglen, "Invalid Policy: Policy missing conditions.");
        goto out;
    }
    n = json_array_size(conds);
    if (!(cv = calloc(n + 1, sizeof(*cv)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (i = 0; i < n; i++)
        if ((rc = cond_read(json_array_get(conds, i), &cv[i], out, msg, msglen)) < 0)
            goto out;
    if ((int64_t)in->now * 1000 > t_ms) {
        rc = fail(HD_EACCESS, msg, msglen, "Invalid according to Policy: Policy expired.");
        goto out;
    }
    for (i = 0; i < n; i++) {
        const char *subj;
        if (cv[i].op == 2)
            continue;
        subj = cond_subject(f, in, cv[i].name);
        if (cv[i].op == 0 ? strcmp(subj, cv[i].value) != 0
                          : strncmp(subj, cv[i].value, strlen(cv[i].value)) != 0) {
            rc = cond_failed(&cv[i], msg, msglen);
            goto out;
        }
    }
    for (i = 0; i < f->n; i++) { /* every field named by a condition */
        size_t c;
        if (exempt(f->v[i].name))
            continue;
        for (c = 0; c < n; c++)
            if (cv[c].op != 2 && strcasecmp(cv[c].name, f->v[i].name) == 0)
                break;
        if (c == n) {
            rc = fail(HD_EACCESS, msg, msglen,
                      "Invalid according to Policy: Extra input fields: %s", f->v[i].name);
            goto out;
        }
    }
    rc = 0;
out:
    free(cv);
    json_decref(j);
    free(doc);
    return rc;
}

int hd_post_check(struct hd_post_form *f, const struct hd_post_in *in, struct hd_post_ok *out,
                  char *msg, size_t msglen)
{
    const char *key, *policy;
    const struct hd_key *k;
    int auth = in->keys && in->keys->n > 0, rc;

    memset(out, 0, sizeof(*out));
    out->max_len = UINT64_MAX;
    msg[0] = '\0';
    if (expand_filename(f) < 0)
        return -ENOMEM;
    key = hd_post_form_get(f, "key");
    if (!key)
        return fail(HD_EBADARG, msg, msglen,
                    "Bucket POST must contain a field named 'key'.  If it is specified, please "
                    "check the order of the fields.");
    if (strlen(key) != field(f, "key")->vlen) /* a NUL would cut the name the policy checks */
        return fail(HD_EBADKEY, msg, msglen, "The key field holds a NUL byte.");
    policy = hd_post_form_get(f, "policy");
    if (!policy) {
        if (auth)
            return fail(hd_post_form_get(f, "AWSAccessKeyId") ||
                                hd_post_form_get(f, "x-amz-credential")
                            ? HD_EBADARG
                            : HD_EMISSINGAUTH,
                        msg, msglen,
                        "Bucket POST must contain a field named 'policy' (an unsigned form may "
                        "only write a bucket that allows anonymous writes; hoard has none).");
    } else {
        if (auth && (rc = signature_check(f, in, policy, out->access, msg, msglen)) < 0)
            return rc;
        if ((rc = policy_check(f, in, policy, out, msg, msglen)) < 0)
            return rc;
    }
    if (auth) {
        k = hd_keys_find(in->keys, out->access);
        if (!k || hd_key_allows(k, in->bucket, 1) < 0)
            return fail(HD_EACCESS, msg, msglen, "Access Denied");
    }
    if (!(out->key = strdup(key)))
        return -ENOMEM;
    return 0;
}
