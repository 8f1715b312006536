#include "common/keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/bprops.h"
#include "common/errors.h"
#include "common/http.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/sigv2.h"
#include "common/sigv4.h"
#include "common/token.h"

/* "rw" | "ro" | "bucket=ro;bucket2=rw" */
static int parse_perms(struct hd_key *k, char *spec)
{
    char *save = NULL, *tok;

    k->all = HD_PERM_RW;
    if (!spec)
        return 0;
    if (strcmp(spec, "rw") == 0)
        return 0;
    if (strcmp(spec, "ro") == 0) {
        k->all = HD_PERM_RO;
        return 0;
    }
    k->all = HD_PERM_NONE;
    for (tok = strtok_r(spec, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        struct hd_key_rule *r;
        if (!eq || eq == tok || (strcmp(eq + 1, "ro") != 0 && strcmp(eq + 1, "rw") != 0))
            return -EINVAL;
        *eq = '\0';
        r = realloc(k->rules, (k->nrules + 1) * sizeof(*r));
        if (!r)
            return -ENOMEM;
        k->rules = r;
        r[k->nrules].bucket = strdup(tok);
        r[k->nrules].perm = strcmp(eq + 1, "rw") == 0 ? HD_PERM_RW : HD_PERM_RO;
        if (!r[k->nrules].bucket)
            return -ENOMEM;
        k->nrules++;
    }
    return 0;
}

/* auth.keys = ACCESS:SECRET[:PERMS][,ACCESS:SECRET[:PERMS]...] */
int hd_keys_parse(struct hd_keys *ks, const char *spec)
{
    char *dup = strdup(spec), *save = NULL, *tok;
    int rc = 0;

    if (!dup)
        return -ENOMEM;
    for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(tok, ':'), *c2;
        struct hd_key *k;
        if (!c1 || c1 == tok || !c1[1]) {
            rc = -EINVAL;
            break;
        }
        *c1 = '\0';
        c2 = strchr(c1 + 1, ':');
        if (c2)
            *c2 = '\0';
        k = realloc(ks->v, (ks->n + 1) * sizeof(*k));
        if (!k) {
            rc = -ENOMEM;
            break;
        }
        ks->v = k;
        k = &ks->v[ks->n++];
        memset(k, 0, sizeof(*k));
        k->access = strdup(tok);
        k->secret = strdup(c1 + 1);
        if (!k->access || !k->secret || (rc = parse_perms(k, c2 ? c2 + 1 : NULL)) < 0) {
            rc = rc < 0 ? rc : -ENOMEM;
            break;
        }
    }
    free(dup);
    return rc;
}

const struct hd_key *hd_keys_find(const struct hd_keys *ks, const char *access)
{
    size_t i;

    for (i = 0; i < ks->n; i++)
        if (strcmp(ks->v[i].access, access) == 0)
            return &ks->v[i];
    return NULL;
}

int hd_keys_secret_for(void *ctx, const char *access, char *secret, size_t max)
{
    const struct hd_key *k = hd_keys_find(ctx, access);

    if (!k)
        return HD_ENOACCESSKEY;
    snprintf(secret, max, "%s", k->secret);
    return 0;
}

void hd_keys_cleanup(struct hd_keys *ks)
{
    size_t i, j;

    for (i = 0; i < ks->n; i++) {
        for (j = 0; j < ks->v[i].nrules; j++)
            free(ks->v[i].rules[j].bucket);
        free(ks->v[i].rules);
        free(ks->v[i].access);
        free(ks->v[i].secret);
    }
    free(ks->v);
    ks->v = NULL;
    ks->n = 0;
}

int hd_key_allows(const struct hd_key *key, const char *bucket, int write)
{
    enum hd_perm p = key->all;
    size_t i;

    for (i = 0; bucket && i < key->nrules; i++)
        if (strcmp(key->rules[i].bucket, bucket) == 0)
            p = key->rules[i].perm;
    if (p == HD_PERM_RW || (p == HD_PERM_RO && !write))
        return 0;
    return HD_EACCESS;
}

/* Whether k may read a CopyObject's source src (the name the copy will use): by its rights,
 * or because everyone may read that object (open; r->public_source is then set), as AWS lets
 * any caller copy out of a public bucket. */
static int copy_source_allowed(const struct hd_key *k, struct hd_req *r, const char *src,
                               hd_public_fn open, void *arg)
{
    char *sb, *sk;
    int rc = hd_copy_source_parse(src, &sb, &sk);

    if (rc < 0)
        return rc;
    if (hd_key_allows(k, sb, 0) == 0) {
        rc = 0;
    } else if (open && open(arg, sb, sk, HD_PUB_READ)) {
        r->public_source = 1;
        rc = 0;
    } else {
        rc = HD_EACCESS;
    }
    free(sb);
    free(sk);
    return rc;
}

int hd_keys_verify(const struct hd_keys *ks, const struct hd_req *r, struct hd_sigv4_auth *a)
{
    struct hd_sigv4_in in;
    int rc;

    memset(&in, 0, sizeof(in));
    in.method = r->method;
    in.path = r->raw_path;
    in.query = r->raw_query;
    in.headers = r->hdrs;
    in.nheaders = r->nhdrs;
    in.now = time(NULL);
    /* SigV2 first: it declines unless the request carries an "AWS " header or the
     * AWSAccessKeyId query form, which SigV4 would reject as malformed */
    rc = hd_sigv2_verify(&in, hd_keys_secret_for, (void *)ks, a);
    if (rc == HD_DECLINED)
        rc = hd_sigv4_verify(&in, hd_keys_secret_for, (void *)ks, a);
    if (rc == HD_DECLINED) {
        memset(a, 0, sizeof(*a));
        a->anonymous = 1;
        return rc;
    }
    if (rc < 0) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_INFO, r->id, "auth failed: %s", hd_strerror(rc));
        return rc;
    }
    a->anonymous = 0;
    return 0;
}

int hd_keys_bearer(const char *secrets, hd_token_revoked_fn revoked, void *arg, struct hd_req *r,
                   struct hd_sigv4_auth *a)
{
    char id[65];
    const char *h = hd_req_header(r, "Authorization"), *why = "no cluster.secret: no tokens";
    char addr[64];
    int rc = HD_EACCESS;

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return HD_DECLINED;
    h += 7;
    while (*h == ' ')
        h++;
    memset(a, 0, sizeof(*a));
    if (secrets && *secrets)
        rc = hd_token_verify(secrets, h, time(NULL), a->access_key, sizeof(a->access_key), NULL,
                             &why);
    if (rc == 0 && revoked && (hd_token_id(h, id) < 0 || revoked(arg, id))) {
        rc = HD_EACCESS;
        why = "the token was revoked";
    }
    if (rc < 0) {
        memset(a, 0, sizeof(*a));
        a->anonymous = 1;
        hd_stats_inc(HD_ST_AUTH_FAILED);
        HD_LOG(HD_WARN, r->id, "auth: bearer token for %s %s from %s refused: %s", r->method,
               r->raw_path, hd_req_remote(r, addr, sizeof(addr)), why);
        hd_resp_header(r, "WWW-Authenticate",
                       rc == HD_EEXPIRED
                           ? "Bearer error=\"invalid_token\", error_description=\"expired\""
                           : "Bearer error=\"invalid_token\"");
        return HD_ETOKEN;
    }
    a->anonymous = 0;
    a->payload = HD_PL_UNSIGNED;
    snprintf(r->principal, sizeof(r->principal), "token %s", a->access_key);
    return 0;
}

int hd_keys_public(int pub, int objects, int list)
{
    switch (pub) {
    case HD_PUB_READ:
        return (objects & HD_PUBLIC_OBJECTS) != 0; /* (some objects: the role asks per key) */
    case HD_PUB_LIST:
        return list != 0;
    case HD_PUB_LIST_MORE:
        return (list & HD_PUBLIC_LIST_MORE) != 0;
    default:
        return 0;
    }
}

int hd_keys_tls_check(const struct hd_req *r, const char *bucket, hd_tls_only_fn tls_only,
                      void *arg)
{
    const char *src;
    char *sb = NULL, *sk = NULL;
    int refused = 0;

    if (r->policy_call || hd_req_secure(r))
        return 0;
    if (bucket && tls_only(arg, bucket))
        refused = 1;
    else if (bucket &&
             ((src = hd_req_header(r, "x-amz-copy-source")) ||
              (src = hd_req_param(r, "object_from"))) && /* a native copy's (a proxy's 307) */
             hd_copy_source_parse(src, &sb, &sk) == 0)
        refused = tls_only(arg, sb);
    free(sb);
    free(sk);
    if (refused)
        hd_stats_inc(HD_ST_AUTH_FAILED);
    return refused ? HD_EACCESS : 0;
}

int hd_keys_tls_policy_call(const struct hd_keys *ks, const struct hd_req *r,
                            const struct hd_sigv4_auth *a, const char *bucket,
                            hd_tls_only_fn tls_only, void *arg)
{
    const struct hd_key *k;

    if (!r->policy_call || !bucket || hd_req_secure(r) || !tls_only(arg, bucket))
        return 0;
    k = a->anonymous ? NULL : hd_keys_find(ks, a->access_key);
    if (k && k->all == HD_PERM_RW)
        return 0;
    hd_stats_inc(HD_ST_AUTH_FAILED);
    return HD_EACCESS;
}

int hd_keys_tls_check_job(const struct hd_req *r, const char *bucket, const json_t *args,
                          hd_tls_only_fn tls_only, void *arg)
{
    const char *names[] = {bucket, json_string_value(json_object_get(args, "to")),
                           json_string_value(json_object_get(args, "output_bucket"))};
    size_t i;
    int rc;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i] && *names[i] && (rc = hd_keys_tls_check(r, names[i], tls_only, arg)) < 0)
            return rc;
    return 0;
}

int hd_keys_native_object_pub(const struct hd_req *r)
{
    if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)
        return HD_PUB_NONE;
    return hd_query_find(&r->query, "uploadId") || hd_query_find(&r->query, "partNumber")
               ? HD_PUB_NONE
               : HD_PUB_READ;
}

int hd_keys_authorize(const struct hd_keys *ks, struct hd_req *r,
                      const struct hd_sigv4_auth *a, const char *bucket, hd_public_fn open,
                      void *arg)
{
    /* a read: GET, HEAD, or what a route classified as one (a batch GET may be a POST) */
    int write = !r->pub && strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0;
    const struct hd_key *k = hd_keys_find(ks, a->access_key);
    const char *src;
    int rc;

    if (!k)
        return HD_ENOACCESSKEY;
    if (!bucket)
        return 0;
    if (hd_key_allows(k, bucket, write) < 0) {
        if (r->pub && open && open(arg, bucket, r->pub_key, r->pub)) {
            r->public_grant = 1;
            return 0; /* what everyone may do */
        }
        hd_stats_inc(HD_ST_AUTH_FAILED);
        return HD_EACCESS;
    }
    /* CopyObject also reads its source: check the name the copy will use */
    src = write ? hd_req_header(r, "x-amz-copy-source") : NULL;
    if (src && (rc = copy_source_allowed(k, r, src, open, arg)) < 0) {
        if (rc == HD_EACCESS)
            hd_stats_inc(HD_ST_AUTH_FAILED);
        return rc;
    }
    return 0;
}
