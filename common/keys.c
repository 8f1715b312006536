#include "common/keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httputil.h"

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

int hd_key_allows_copy_source(const struct hd_key *k, const char *src)
{
    char *sb, *sk;
    int rc = hd_copy_source_parse(src, &sb, &sk);

    if (rc < 0)
        return rc;
    rc = hd_key_allows(k, sb, 0);
    free(sb);
    free(sk);
    return rc < 0 ? HD_EACCESS : 0;
}
