#include "common/s3resp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/xml.h"

void hd_s3_list_cleanup(struct hd_s3_list *l)
{
    size_t i;

    for (i = 0; i < l->nents; i++)
        free(l->ents[i].name);
    for (i = 0; i < l->nprefixes; i++)
        free(l->prefixes[i]);
    free(l->ents);
    free(l->prefixes);
    free(l->next_token);
    memset(l, 0, sizeof(*l));
}

static int num(const char *s, int n, int *out)
{
    int i, v = 0;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int hd_s3resp_parse_iso8601(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, se, frac = 0, fd = 0;
    struct tm tm;
    const char *p;
    time_t t;

    if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return HD_EBADARG;
    if (num(s, 4, &y) || num(s + 5, 2, &mo) || num(s + 8, 2, &d) || num(s + 11, 2, &h) ||
        num(s + 14, 2, &mi) || num(s + 17, 2, &se))
        return HD_EBADARG;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return HD_EBADARG;
    p = s + 19;
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9')
            return HD_EBADARG; /* a fraction has digits */
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (fd < 3) {
                frac = frac * 10 + (*p - '0');
                fd++;
            }
        while (fd < 3) {
            frac *= 10;
            fd++;
        }
    }
    if (strcmp(p, "Z") != 0)
        return HD_EBADARG;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = se;
    t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != d || tm.tm_mon != mo - 1)
        return HD_EBADARG; /* a day the month does not have (2030-02-30) was normalised */
    *ms = (int64_t)t * 1000 + frac;
    return 0;
}

/* Text of a key or prefix element, URL-decoded when the listing says so; malloc'd. */
static int name_dup(const char *raw, int url, char **out)
{
    size_t n = strlen(raw), len;
    char *d = malloc(n + 1);

    *out = NULL;
    if (!d)
        return -ENOMEM;
    if (url) {
        if (hd_url_decode(raw, n, d, &len, 0) < 0 || len != strlen(d)) {
            free(d);
            return HD_EMALFORMEDXML;
        }
    } else {
        memcpy(d, raw, n + 1);
    }
    *out = d;
    return 0;
}

static int add_ent(struct hd_s3_list *l, const struct hd_xnode *c, int url)
{
    const struct hd_xnode *k = hd_xnode_child(c, "Key");
    const char *size = hd_xnode_child_text(c, "Size");
    const char *etag = hd_xnode_child_text(c, "ETag");
    const char *lm = hd_xnode_child_text(c, "LastModified");
    struct hd_s3_ent *e, *nv;
    size_t n;
    int rc;

    if (!k)
        return HD_EMALFORMEDXML;
    if (l->nents % 64 == 0) {
        nv = realloc(l->ents, (l->nents + 64) * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        l->ents = nv;
    }
    e = &l->ents[l->nents];
    memset(e, 0, sizeof(*e));
    if ((rc = name_dup(k->raw, url, &e->name)) < 0)
        return rc;
    l->nents++; /* owned by l from here */
    if (hd_object_name_check(e->name, strlen(e->name)) < 0)
        return HD_EMALFORMEDXML;
    if (size && hd_parse_u64(size, &e->size) < 0)
        return HD_EMALFORMEDXML;
    if (lm && hd_s3resp_parse_iso8601(lm, &e->mtime_ms) < 0)
        e->mtime_ms = 0;
    if (etag) {
        n = strlen(etag);
        if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
            etag++;
            n -= 2;
        }
        snprintf(e->etag, sizeof(e->etag), "%.*s", (int)n, etag);
    }
    return 0;
}

static int add_prefix(struct hd_s3_list *l, const struct hd_xnode *c, int url)
{
    const struct hd_xnode *p = hd_xnode_child(c, "Prefix");
    char **nv;
    int rc;

    if (!p)
        return HD_EMALFORMEDXML;
    if (l->nprefixes % 64 == 0) {
        nv = realloc(l->prefixes, (l->nprefixes + 64) * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        l->prefixes = nv;
    }
    if ((rc = name_dup(p->raw, url, &l->prefixes[l->nprefixes])) < 0)
        return rc;
    l->nprefixes++;
    return 0;
}

int hd_s3resp_parse_list(const char *body, size_t len, struct hd_s3_list *out)
{
    struct hd_xnode *root = NULL;
    const struct hd_xnode *c;
    const char *enc, *tr, *tok;
    int rc, url;

    memset(out, 0, sizeof(*out));
    if ((rc = hd_xml_parse(body, len, &root)) < 0)
        return rc;
    if (strcmp(root->name, "ListBucketResult") != 0) {
        rc = HD_EMALFORMEDXML;
        goto out;
    }
    enc = hd_xnode_child_text(root, "EncodingType");
    url = enc && strcmp(enc, "url") == 0;
    for (c = root->child; c; c = c->next) {
        if (strcmp(c->name, "Contents") == 0)
            rc = add_ent(out, c, url);
        else if (strcmp(c->name, "CommonPrefixes") == 0)
            rc = add_prefix(out, c, url);
        if (rc < 0)
            goto out;
    }
    tr = hd_xnode_child_text(root, "IsTruncated");
    out->truncated = tr && strcmp(tr, "true") == 0;
    tok = hd_xnode_child_text(root, "NextContinuationToken");
    if (tok && *tok && !(out->next_token = strdup(tok)))
        rc = -ENOMEM;
out:
    hd_xnode_free(root);
    if (rc < 0)
        hd_s3_list_cleanup(out);
    return rc;
}

int hd_s3resp_parse_field(const char *body, size_t len, const char *root, const char *field,
                          char *out, size_t outlen)
{
    struct hd_xnode *r = NULL;
    const char *t;
    int rc;

    if (outlen)
        out[0] = '\0';
    if ((rc = hd_xml_parse(body, len, &r)) < 0)
        return rc;
    if (strcmp(r->name, root) != 0) {
        hd_xnode_free(r);
        return HD_EMALFORMEDXML;
    }
    t = hd_xnode_child_text(r, field);
    if (outlen)
        snprintf(out, outlen, "%s", t ? t : "");
    hd_xnode_free(r);
    return 0;
}

int hd_s3resp_parse_error(const char *body, size_t len, char *code, size_t codelen, char *msg,
                          size_t msglen)
{
    int rc = hd_s3resp_parse_field(body, len, "Error", "Code", code, codelen);

    if (rc == 0)
        rc = hd_s3resp_parse_field(body, len, "Error", "Message", msg, msglen);
    else if (msglen)
        msg[0] = '\0';
    return rc;
}
