/* expiration: what a bucket's lifecycle rules say of one object, for S3's x-amz-expiration
 * answer header (PUT, GET, HEAD, CopyObject, CompleteMultipartUpload) and for the lifecycle
 * job (lifecycle.c). The rules are the ones each target keeps parsed beside its bucket array
 * (hd_store_with_lifecycle), read under the bucket lock. Any thread. */
#include "target/api/expiration.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/httputil.h"
#include "common/lifecycle.h"
#include "target/object/object.h"

json_t *hd_lifecycle_obj_tags(const struct hd_obj_meta *m)
{
    char *text = NULL;
    json_t *j = NULL;

    if (hd_hdrs_tags(m->hdrs, &text) == 0 && text)
        j = json_loads(text, 0, NULL);
    free(text);
    return j;
}

/* x-amz-expiration's value for one object, computed with the bucket's rules in hand. */
struct expiry {
    const char *key;
    const struct hd_obj_meta *m;
    int64_t day_ms;
    char *value; /* malloc'd */
};

static int expiry_of(const json_t *rules, void *arg)
{
    struct expiry *e = arg;
    json_t *tags = NULL;
    const char *id = NULL;
    int64_t at = 0;
    int need_tags, found;
    struct hd_buf v;
    char date[32];

    if (!(hd_lc_actions(rules, &need_tags) & HD_LC_EXPIRES) || !hd_lc_may_expire(rules, e->key))
        return 0;
    if (need_tags)
        tags = hd_lifecycle_obj_tags(e->m);
    found = hd_lc_expiry(rules, e->key, e->m->size, e->m->mtime_ms, tags, e->day_ms, &at, &id);
    json_decref(tags);
    if (!found || !id)
        return 0;
    hd_buf_init(&v);
    hd_http_date_format((time_t)(at / 1000), date);
    hd_buf_printf(&v, "expiry-date=\"%s\", rule-id=\"", date);
    hd_uri_encode(&v, id, strlen(id), 0); /* unreserved characters only: nothing can split it */
    hd_buf_puts(&v, "\"");
    if (!v.oom)
        e->value = strdup(v.data);
    hd_buf_cleanup(&v);
    return 1;
}

char *hd_lifecycle_expiration(struct hd_target *t, const char *bucket, const char *key,
                              const struct hd_obj_meta *m)
{
    struct expiry e = {key, m, t->lc_day_ms, NULL};

    if (hd_store_lifecycle_buckets(t->st))
        hd_store_with_lifecycle(t->st, bucket, expiry_of, &e);
    return e.value;
}

void hd_lifecycle_header(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key,
                         const struct hd_obj_meta *m)
{
    char *v = hd_lifecycle_expiration(t, bucket, key, m);

    if (v)
        hd_resp_header(r, "x-amz-expiration", v);
    free(v);
}

static int has_rules(const json_t *rules, void *arg)
{
    (void)rules;
    (void)arg;
    return 1;
}

void hd_lifecycle_header_of(struct hd_req *r, struct hd_target *t, const char *bucket,
                            const char *key)
{
    struct hd_obj_meta m;

    if (!hd_store_lifecycle_buckets(t->st) ||
        !hd_store_with_lifecycle(t->st, bucket, has_rules, NULL) ||
        hd_store_lookup(t->st, bucket, key, &m) < 0)
        return;
    hd_lifecycle_header(r, t, bucket, key, &m);
    hd_obj_meta_cleanup(&m);
}
