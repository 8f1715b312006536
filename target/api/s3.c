/* s3: the S3 API on a target: the shared front end (common/s3front.h) with the target's
 * handlers, which serve from the store. Path style at "/" and "/s3/"; virtual-host style
 * under s3.domain, or as a relaying proxy read it (X-Hoard-Vhost). HTTP workers. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/s3front.h"
#include "common/tagging.h"
#include "common/usermeta.h"
#include "common/xml.h"
#include "target/api/mpu.h"

/* Virtual-host style: Host "BUCKET.<s3.domain>[:port]" -> "/BUCKET" + path (heap). */
static char *vhost_path(struct hd_req *r, void *ctx, const char *path)
{
    struct hd_target *t = ctx;

    if (r->trusted == HD_TRUST_NODE) {
        /* a proxy read the Host already (its s3.domain, not ours) and said what it found,
         * under its signature (target/cluster/cluster.c) */
        const char *vh = hd_req_header(r, "X-Hoard-Vhost");
        struct hd_buf b;
        if (!vh)
            return NULL;
        hd_buf_init(&b);
        hd_buf_printf(&b, "/%s%s", vh, path);
        return b.oom ? (hd_buf_cleanup(&b), NULL) : hd_buf_steal(&b, NULL);
    }
    if (r->trusted == HD_TRUST_REDIRECT)
        /* a proxy's 307 names the path-style path it authorised (proxy/data/route.c): a
         * Host the client chose must not turn /A/K into bucket H's key "A/K" */
        return NULL;
    return hd_s3_vhost_path(hd_req_header(r, "Host"), t->domain, path);
}

static int authenticate(struct hd_req *r, void *ctx, const char *bucket, const char *key,
                        struct hd_sigv4_auth *a)
{
    struct hd_target *t = ctx;
    int rc = hd_target_authenticate(r, t, a);

    return rc < 0 ? rc : hd_target_authorize(r, t, a, bucket);
}

/* ---- buckets, for the front end ---- */

static const char *region(void *ctx)
{
    return ((struct hd_target *)ctx)->region;
}

static int buckets(void *ctx, struct hd_s3_bucket **out, size_t *n)
{
    struct hd_target *t = ctx;
    struct hd_bucket_info *bk;
    size_t i;
    int rc;

    if ((rc = hd_store_bucket_list(t->st, &bk, n)) < 0)
        return rc;
    if (!(*out = calloc(*n ? *n : 1, sizeof(**out)))) {
        free(bk);
        return -ENOMEM;
    }
    for (i = 0; i < *n; i++) {
        snprintf((*out)[i].name, sizeof((*out)[i].name), "%s", bk[i].name);
        (*out)[i].created = bk[i].created;
    }
    free(bk);
    return 0;
}

static int bucket_exists(void *ctx, const char *bucket)
{
    return hd_store_bucket_exists(((struct hd_target *)ctx)->st, bucket);
}

static int bucket_create(void *ctx, const char *bucket)
{
    return hd_store_bucket_create(((struct hd_target *)ctx)->st, bucket, "ais");
}

/* A bucket's properties as this node keeps them (in a cluster the BMD's win: what a proxy
 * sets is what lasts). */
static int props_get(void *ctx, const char *bucket, char **json)
{
    return hd_store_bucket_props(((struct hd_target *)ctx)->st, bucket, json);
}

static int props_patch(void *ctx, const char *bucket, const char *patch, char *msg, size_t msglen)
{
    return hd_store_bucket_patch_props(((struct hd_target *)ctx)->st, bucket, patch, msg, msglen);
}

static int bucket_delete(void *ctx, const char *bucket, char *msg, size_t msglen)
{
    struct hd_target *t = ctx;
    int rc = hd_store_bucket_delete(t->st, bucket);

    if (rc == 0)
        hd_mpu_drop_bucket(t, bucket);
    return rc;
}

static int list(void *ctx, const char *bucket, const struct hd_s3_list_req *q,
                struct hd_s3_list_page *pg, char *msg, size_t msglen)
{
    struct hd_target *t = ctx;
    struct hd_list_opts o;
    struct hd_list_res res;
    size_t i;
    int rc;

    memset(&o, 0, sizeof(o));
    o.prefix = q->prefix;
    o.delimiter = q->delimiter;
    o.start_after = q->from;
    o.max = (size_t)q->max;
    if ((rc = hd_store_list(t->st, bucket, &o, &res)) < 0)
        return rc;
    for (i = 0; rc == 0 && i < res.nents; i++)
        rc = hd_s3_page_add(pg, res.ents[i].name, 0, res.ents[i].size, res.ents[i].etag,
                            res.ents[i].mtime_ms, NULL, res.ents[i].sclass);
    for (i = 0; rc == 0 && i < res.nprefixes; i++)
        rc = hd_s3_page_add(pg, res.prefixes[i], 1, 0, NULL, 0, NULL, NULL);
    hd_s3_page_end(pg, res.truncated, res.last);
    hd_list_res_cleanup(&res);
    return rc;
}

static int delete_keys(void *ctx, const char *bucket, const struct hd_delete_req *dr, int *err)
{
    struct hd_target *t = ctx;
    size_t i;

    for (i = 0; i < dr->n; i++) {
        if (err[i] < 0)
            continue;
        err[i] = hd_store_delete(t->st, bucket, dr->objs[i].key);
        if (err[i] == HD_ENOSUCHKEY)
            err[i] = 0;
    }
    return 0;
}

static void list_uploads(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_list_uploads(r, ctx, c->bucket, c->owner);
}

/* ---- objects ---- */

static const struct hd_sigv4_auth *signed_auth(const struct hd_s3_call *c)
{
    return c->auth.anonymous ? NULL : &c->auth;
}

static void mpu_create(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_create(r, ctx, c->bucket, c->key);
}

static void mpu_part(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_upload_part(r, ctx, c->bucket, c->key, signed_auth(c));
}

static void mpu_part_copy(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_upload_part_copy(r, ctx, c->bucket, c->key);
}

static void mpu_complete(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_complete(r, ctx, c->bucket, c->key);
}

static void mpu_abort(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_abort(r, ctx, c->bucket, c->key);
}

static void mpu_parts(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_mpu_list_parts(r, ctx, c->bucket, c->key, c->owner);
}

static void copy_object(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_obj_copy(r, ctx, c->bucket, c->key);
}

static void get_object(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_obj_get(r, ctx, c->bucket, c->key, c->op == HD_S3_HEAD_OBJECT);
}

static void put_object(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_obj_put(r, ctx, c->bucket, c->key, signed_auth(c));
}

static void delete_object(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    hd_obj_delete(r, ctx, c->bucket, c->key, 1);
}

/* The bucket of an object subresource call (?acl, ?tagging): 0 native, 1 S3-backed, or
 * answered with the error (negative). */
static int sub_bucket(struct hd_req *r, struct hd_target *t, const struct hd_s3_call *c)
{
    struct hd_cbucket *cb;
    int rc;

    if ((rc = hd_store_bucket_exists(t->st, c->bucket)) < 0) {
        hd_resp_err(r, rc);
        return rc;
    }
    if ((cb = hd_cache_bucket(t->cache, c->bucket))) {
        hd_cbucket_unref(cb);
        return 1;
    }
    return 0;
}

/* An object subresource hoard answers the same for every object (?acl): 0 when the bucket
 * exists and, native, holds the object (an S3-backed bucket's object may be only upstream: not
 * looked for); otherwise answered with the error. */
static int object_sub_check(struct hd_req *r, struct hd_target *t, const struct hd_s3_call *c)
{
    struct hd_obj_meta m;
    int rc = sub_bucket(r, t, c);

    if (rc != 0)
        return rc < 0 ? rc : 0;
    if ((rc = hd_store_lookup(t->st, c->bucket, c->key, &m)) < 0) {
        hd_resp_err(r, rc);
        return rc;
    }
    hd_obj_meta_cleanup(&m);
    return 0;
}

static const struct hd_s3_front front;

static void object_acl(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    if (object_sub_check(r, ctx, c) == 0)
        hd_s3_acl_answer(r, &front, ctx, c);
}

/* ---- object tags ----
 * A native bucket's object keeps its tags in its catalog row (hdrs, target/object), so they
 * travel with it as its other metadata does (rebalance, copies between targets, multipart
 * Complete). An S3-backed bucket's objects live upstream, whose tags hoard neither reads nor
 * writes: GET answers the empty set, PUT and DELETE 501. */

/* One tagging call of a native bucket's object: GET (the tags into tags), PUT (tags, NULL:
 * none, replace the set) or DELETE. */
struct tagcall {
    struct hd_target *t;
    enum hd_s3_op op;
    char *bucket, *key;
    char *tags;
    json_t *md;  /* a user metadata edit instead (op PUT; hd_target_custom_md): the entries */
    int replace; /* ... replacing the object's instead of merged into them */
    int gfn;     /* the object may sit on another target (get-from-neighbour) */
    int64_t rterm, rversion; /* the map the request was routed by */
};

static void tagcall_free(void *arg)
{
    struct tagcall *tc = arg;

    free(tc->bucket);
    free(tc->key);
    free(tc->tags);
    json_decref(tc->md);
    free(tc);
}

static struct tagcall *tagcall_make(struct hd_req *r, struct hd_target *t, const char *bucket,
                                    const char *key, enum hd_s3_op op)
{
    struct tagcall *tc = calloc(1, sizeof(*tc));

    if (!tc || !(tc->bucket = strdup(bucket)) || !(tc->key = strdup(key))) {
        if (tc)
            tagcall_free(tc);
        return NULL;
    }
    tc->t = t;
    tc->op = op;
    tc->rterm = r->routed_term;
    tc->rversion = r->routed_version;
    return tc;
}

static struct tagcall *tagcall_new(struct hd_req *r, struct hd_target *t,
                                   const struct hd_s3_call *c)
{
    return tagcall_make(r, t, c->bucket, c->key, c->op);
}

/* hd_store_update_hdrs' edit: the row's hdrs with tags arg (NULL: none). */
static int set_tags(const char *hdrs, char **out, void *arg)
{
    return hd_hdrs_with_tags(hdrs, arg, out);
}

/* hd_store_update_meta's edit: the user metadata with the call's entries. */
static int set_md(const char *meta, char **out, void *arg)
{
    struct tagcall *tc = arg;

    return hd_usermeta_merge(meta, tc->md, tc->replace, out);
}

/* The call against the copy here (disk only): 0 or the error. */
static int tagcall_step(struct tagcall *tc)
{
    struct hd_obj_meta m;
    int rc;

    if (tc->md)
        return hd_store_update_meta(tc->t->st, tc->bucket, tc->key, set_md, tc);
    if (tc->op != HD_S3_GET_OBJECT_TAGGING)
        return hd_store_update_hdrs(tc->t->st, tc->bucket, tc->key, set_tags, tc->tags);
    if ((rc = hd_store_lookup(tc->t->st, tc->bucket, tc->key, &m)) < 0)
        return rc;
    rc = hd_hdrs_tags(m.hdrs, &tc->tags);
    hd_obj_meta_cleanup(&m);
    return rc;
}

static void tagcall_answer(struct hd_req *r, struct tagcall *tc, int rc)
{
    struct hd_buf b;

    if (rc < 0) {
        hd_resp_err(r, rc);
    } else if (tc->op == HD_S3_GET_OBJECT_TAGGING) {
        hd_buf_init(&b);
        hd_tags_xml(&b, tc->tags);
        hd_resp_xml(r, 200, &b);
    } else {
        hd_resp_empty(r, tc->op == HD_S3_DELETE_OBJECT_TAGGING ? 204 : 200);
    }
}

/* While objects move between targets (a cluster map change, a target in maintenance), on a
 * pool thread: an object not here yet is fetched from its previous holder first
 * (get-from-neighbour, as a GET does), and after a change of its tags the copies other
 * targets still hold are deleted (as a DELETE of the object does meanwhile): they have the
 * same ETag and mtime, so when objects move back one of them could win over the copy here
 * and take the tags away. */
static void tagcall_moving(struct hd_acall *a)
{
    struct tagcall *tc = a->arg;
    int rc = tagcall_step(tc);

    if (rc == HD_ENOSUCHKEY && tc->gfn &&
        hd_rebalance_gfn(tc->t->rb, tc->rterm, tc->rversion, tc->bucket, tc->key) == 0)
        rc = tagcall_step(tc);
    if (rc == 0 && tc->op != HD_S3_GET_OBJECT_TAGGING)
        hd_rebalance_delete_elsewhere(tc->t->rb, tc->bucket, tc->key);
    a->rc = rc;
}

static void tagcall_moving_done(struct hd_req *r, struct hd_acall *a)
{
    tagcall_answer(r, a->arg, a->rc);
}

/* Runs tc (taken) for r: here, or on the pool when the object may sit on another target
 * (objects are moving and this target owns it: hd_rebalance_may_gfn). from_body: called once
 * r's body was read (PUT), when the HTTP layer will not run r's on_end again by itself. */
static void tagcall_run(struct hd_req *r, struct tagcall *tc, int from_body)
{
    int rc;

    tc->gfn = hd_rebalance_may_gfn(tc->t->rb, r, tc->bucket, tc->key);
    if (!tc->gfn || tc->op == HD_S3_GET_OBJECT_TAGGING) {
        rc = tagcall_step(tc);
        if (!tc->gfn || rc != HD_ENOSUCHKEY) { /* a read held here needs nothing else */
            if (rc == HD_ENOSUCHKEY && hd_rebalance_stale_route(tc->t->rb, r, tc->bucket, tc->key))
                hd_resp_err_msg(r, HD_EUNAVAIL,
                                "The cluster map changed while this request was routed; retry.");
            else
                tagcall_answer(r, tc, rc);
            tagcall_free(tc);
            return;
        }
    }
    hd_acall_request(r, tc->t->pool, tagcall_moving, tagcall_moving_done, tc, tagcall_free);
    if (from_body && !r->responded && r->on_end)
        r->on_end(r); /* park (or answer) now */
}

/* GetObjectTagging: the object's tags, sorted by key (an S3-backed bucket's: none). */
static void get_tagging(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    struct hd_target *t = ctx;
    struct tagcall *tc;
    struct hd_buf b;
    int rc = sub_bucket(r, t, c);

    if (rc < 0)
        return;
    if (rc == 1) {
        hd_buf_init(&b);
        hd_tags_xml(&b, NULL);
        hd_resp_xml(r, 200, &b);
        return;
    }
    if (!(tc = tagcall_new(r, t, c)))
        hd_resp_err(r, -ENOMEM);
    else
        tagcall_run(r, tc, 0);
}

/* PutObjectTagging's call while its body is read: tc is the reader's until handed on. */
struct tagbody {
    struct tagcall *tc;
};

static void tagbody_free(void *arg)
{
    struct tagbody *tb = arg;

    if (tb->tc)
        tagcall_free(tb->tc);
    free(tb);
}

static void put_tagging_end(struct hd_req *r, void *ctx, const char *body, size_t len)
{
    struct tagbody *tb = ctx;
    struct tagcall *tc = tb->tc;
    int rc = hd_tags_parse_xml(body, len, &tc->tags);

    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    tb->tc = NULL;
    tagcall_run(r, tc, 1);
}

/* PutObjectTagging (the Tagging body replaces every tag) and DeleteObjectTagging (204): a
 * change of the catalog row's metadata only, so the object's content, ETag and Last-Modified
 * stay as they were. */
static void put_tagging(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    struct hd_target *t = ctx;
    struct tagcall *tc;
    struct tagbody *tb;
    int rc = sub_bucket(r, t, c);

    if (rc < 0)
        return;
    if (rc == 1) {
        hd_resp_err_msg(r, HD_ENOTIMPL, hd_api_upstream_tags_msg);
        return;
    }
    if (!(tc = tagcall_new(r, t, c))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (c->op == HD_S3_DELETE_OBJECT_TAGGING) {
        tagcall_run(r, tc, 0);
        return;
    }
    if (!(tb = calloc(1, sizeof(*tb)))) {
        tagcall_free(tc);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    tb->tc = tc;
    hd_s3_read_body(r, &c->auth, (size_t)64 * 1024, put_tagging_end, tb, tagbody_free);
}

/* ---- AIStore custom metadata ----
 * ObjectWriter.set_custom_props(custom_metadata, replace_existing) (obj/object_writer.py):
 * PATCH /v1/objects/B/O with {"action":"","value":{name: value}} (and ?new_custom=true to
 * replace). The entries are the object's user metadata, the x-amz-meta-* of S3 (HEAD's
 * ais-custom-md): merged in, in the catalog row only, as object tags are (the content, ETag
 * and Last-Modified stay), with the same path while objects move. */

static void custom_md_body(struct hd_req *r, void *ctx, json_t *j)
{
    struct tagbody *tb = ctx;
    struct tagcall *tc = tb->tc;
    json_t *v = json_object_get(j, "value");

    if (!json_is_object(v)) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "Expected {\"value\": {NAME: VALUE, ...}}: the custom metadata to set.");
        return;
    }
    tc->md = json_incref(v);
    tb->tc = NULL;
    tagcall_run(r, tc, 1);
}

void hd_target_custom_md(struct hd_req *r, struct hd_target *t, const char *bucket, const char *key)
{
    struct tagcall *tc;
    struct tagbody *tb;
    struct hd_cbucket *cb;
    const char *nc = hd_req_param(r, "new_custom");
    int rc;

    if ((rc = hd_store_bucket_exists(t->st, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((cb = hd_cache_bucket(t->cache, bucket))) {
        hd_cbucket_unref(cb);
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "Custom metadata cannot be changed in S3-backed buckets: hoard does not "
                        "forward metadata changes to the upstream bucket.");
        return;
    }
    if (!(tc = tagcall_make(r, t, bucket, key, HD_S3_PUT_OBJECT_TAGGING)) ||
        !(tb = calloc(1, sizeof(*tb)))) {
        if (tc)
            tagcall_free(tc);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    tc->replace = nc && (strcmp(nc, "true") == 0 || strcmp(nc, "1") == 0);
    tb->tc = tc;
    hd_req_read_json(r, (size_t)64 * 1024, custom_md_body, tb, tagbody_free);
}

/* <ObjectParts> of a multipart object: its part count and a page of part sizes
 * (x-amz-max-parts, default 1000; x-amz-part-number-marker). 0 or HD_EBADHEADER. */
static int attributes_parts(struct hd_req *r, struct hd_buf *b, const struct hd_obj_meta *m)
{
    const char *hm = hd_req_header(r, "x-amz-max-parts");
    const char *hp = hd_req_header(r, "x-amz-part-number-marker");
    uint64_t max = 1000, marker = 0, i, last = 0, *sizes = NULL;
    size_t n = 0;
    int rc;

    if ((hm && (hd_parse_u64(hm, &max) < 0 || max > 1000)) ||
        (hp && (hd_parse_u64(hp, &marker) < 0 || marker > 10000)))
        return HD_EBADHEADER;
    if ((rc = hd_obj_part_sizes(m, &sizes, &n)) < 0 || !n)
        return rc; /* not uploaded in parts: no <ObjectParts> */
    hd_xml_open(b, "ObjectParts");
    hd_xml_elemf(b, "PartsCount", "%llu", (unsigned long long)n);
    hd_xml_elemf(b, "PartNumberMarker", "%llu", (unsigned long long)marker);
    for (i = marker; i < n && i < marker + max; i++) {
        hd_xml_open(b, "Part");
        hd_xml_elemf(b, "PartNumber", "%llu", (unsigned long long)(i + 1));
        hd_xml_elemf(b, "Size", "%llu", (unsigned long long)sizes[i]);
        hd_xml_close(b, "Part");
        last = i + 1;
    }
    hd_xml_elemf(b, "NextPartNumberMarker", "%llu", (unsigned long long)last);
    hd_xml_elemf(b, "MaxParts", "%llu", (unsigned long long)max);
    hd_xml_elem(b, "IsTruncated", last < n && last >= marker + max ? "true" : "false");
    hd_xml_close(b, "ObjectParts");
    free(sizes);
    return 0;
}

/* GET ?attributes: what HEAD would say, as XML (S3-backed buckets: their objects live
 * upstream, which is not asked: 501). */
static void object_attributes(struct hd_req *r, void *ctx, const struct hd_s3_call *c)
{
    struct hd_target *t = ctx;
    struct hd_cbucket *cb;
    struct hd_obj_meta m;
    struct hd_buf b;
    char date[32], sclass[32], ck[64];
    int want, rc;

    want = hd_s3_attributes_parse(hd_req_header(r, "x-amz-object-attributes"));
    if (want <= 0) {
        hd_resp_err_msg(r, HD_EBADARG,
                        want < 0 ? "Invalid attribute name specified."
                                 : "The x-amz-object-attributes header specifying the "
                                   "attributes to be retrieved is either missing or empty");
        return;
    }
    if ((rc = hd_store_bucket_exists(t->st, c->bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if ((cb = hd_cache_bucket(t->cache, c->bucket))) {
        hd_cbucket_unref(cb);
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "GetObjectAttributes is not supported for S3-backed "
                        "buckets: use HeadObject.");
        return;
    }
    if ((rc = hd_store_lookup(t->st, c->bucket, c->key, &m)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (hd_obj_ssec_refused(r))
        goto out;
    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "GetObjectAttributesResponse", HD_XML_S3_NS);
    if (want & HD_ATTR_ETAG)
        hd_xml_elem(&b, "ETag", m.etag); /* unquoted, as AWS answers it here */
    if ((want & HD_ATTR_CHECKSUM) && m.ck_type[0]) {
        const char *dash = strchr(m.ck_val, '-'); /* composite: "b64-N" */
        snprintf(ck, sizeof(ck), "Checksum%s", m.ck_type);
        hd_xml_open(&b, "Checksum");
        hd_buf_printf(&b, "<%s>%.*s</%s>", ck,
                      (int)(dash ? (size_t)(dash - m.ck_val) : strlen(m.ck_val)), m.ck_val, ck);
        hd_xml_elem(&b, "ChecksumType", dash ? "COMPOSITE" : "FULL_OBJECT");
        hd_xml_close(&b, "Checksum");
    }
    if ((want & HD_ATTR_PARTS) && (rc = attributes_parts(r, &b, &m)) < 0) {
        hd_buf_cleanup(&b);
        hd_resp_err_msg(r, rc,
                        rc == HD_EBADHEADER
                            ? "x-amz-max-parts and x-amz-part-number-marker must be "
                              "integers between 0 and 1000 and 0 and 10000."
                            : NULL);
        goto out;
    }
    if (want & HD_ATTR_CLASS) {
        hd_hdrs_class(m.hdrs, sclass, sizeof(sclass));
        hd_xml_elem(&b, "StorageClass", sclass);
    }
    if (want & HD_ATTR_SIZE)
        hd_xml_elemf(&b, "ObjectSize", "%llu", (unsigned long long)m.size);
    hd_xml_close(&b, "GetObjectAttributesResponse");
    hd_http_date_format((time_t)(m.mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_xml(r, 200, &b);
out:
    hd_obj_meta_cleanup(&m);
}

static const struct hd_s3_front front = {
    .vhost = vhost_path,
    .authenticate = authenticate,
    .region = region,
    .buckets = buckets,
    .bucket_exists = bucket_exists,
    .bucket_create = bucket_create,
    .props_get = props_get,
    .props_patch = props_patch,
    .bucket_delete = bucket_delete,
    .list = list,
    .delete_keys = delete_keys,
    .handlers =
        {
            [HD_S3_LIST_UPLOADS] = list_uploads,
            [HD_S3_CREATE_MPU] = mpu_create,
            [HD_S3_UPLOAD_PART] = mpu_part,
            [HD_S3_UPLOAD_PART_COPY] = mpu_part_copy,
            [HD_S3_COMPLETE_MPU] = mpu_complete,
            [HD_S3_ABORT_MPU] = mpu_abort,
            [HD_S3_LIST_PARTS] = mpu_parts,
            [HD_S3_COPY_OBJECT] = copy_object,
            [HD_S3_GET_OBJECT] = get_object,
            [HD_S3_HEAD_OBJECT] = get_object,
            [HD_S3_PUT_OBJECT] = put_object,
            [HD_S3_DELETE_OBJECT] = delete_object,
            [HD_S3_GET_OBJECT_ACL] = object_acl,
            [HD_S3_PUT_OBJECT_ACL] = object_acl,
            [HD_S3_GET_OBJECT_TAGGING] = get_tagging,
            [HD_S3_PUT_OBJECT_TAGGING] = put_tagging,
            [HD_S3_DELETE_OBJECT_TAGGING] = put_tagging,
            [HD_S3_GET_OBJECT_ATTRIBUTES] = object_attributes,
        },
};

void hd_s3_handle(struct hd_req *r, struct hd_target *t, const char *path)
{
    hd_s3_dispatch(r, path, &front, t);
}
