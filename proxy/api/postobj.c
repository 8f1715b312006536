/* postobj: POST Object on the proxy (an HTML form upload: POST /B with multipart/form-data,
 * its policy signed inside the form). libmicrohttpd's post processor reads the form; the
 * fields before the file are checked (common/postpolicy.h: signature, policy, conditions,
 * permission); then the file streams to the key's owner as a PUT through the relay, filtered
 * (common/relay.h): the rest of the form is parsed on the way and only the file's bytes go
 * on, chunked, so nothing is held but a window. The node never sees the end of a body the
 * form did not complete (truncated form, content-length-range exceeded): the transfer is
 * aborted and nothing is stored. The owner's answer becomes the form's: 204, 200, 201 with a
 * PostResponse, or 303 to success_action_redirect. HTTP workers. */
#include "proxy/api/api.h"
#include "proxy/data/data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <microhttpd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/log.h"
#include "common/postpolicy.h"
#include "common/relay.h"
#include "common/s3front.h"
#include "common/tagging.h"
#include "common/xml.h"

#define POST_MAGIC 0x706f7374u
/* The fields before the file: AWS allows 20 KB. */
#define PRE_MAX (20u * 1024)
/* ... in at most this many fields (each is looked up by name as it comes) */
#define FIELDS_MAX 1000
/* The post processor's buffer, and the most form bytes parsed at once before the relay
 * starts: what one parse may hand on stays within HD_RELAY_FILTER_SLACK. */
#define PP_BUF (16u * 1024)
#define SLICE (16u * 1024)

enum part { FIELDS, FILE_PART, AFTER };

struct post {
    uint32_t magic;
    struct hd_proxy *p;
    struct MHD_PostProcessor *pp;
    char *bucket;
    int vhost;
    struct hd_post_form form;
    size_t pre;      /* bytes of the fields so far */
    char *last;      /* the name of the field being read */
    size_t last_len; /* its bytes so far */
    enum part part;
    struct hd_buf first; /* the file's bytes read before the relay started */
    hd_relay_out_fn out; /* while the relay parses: where the file's bytes go */
    void *oarg;
    uint64_t flen;
    struct hd_post_ok ok;
    int checked;
    int err;
    char msg[512];
};

static void post_free(void *arg)
{
    struct post *st = arg;

    if (!st || st->magic != POST_MAGIC)
        return;
    if (st->pp)
        MHD_destroy_post_processor(st->pp);
    hd_post_form_cleanup(&st->form);
    hd_post_ok_cleanup(&st->ok);
    hd_buf_cleanup(&st->first);
    free(st->bucket);
    free(st->last);
    st->magic = 0;
    free(st);
}

static void set_err(struct post *st, int code, const char *msg)
{
    if (st->err)
        return;
    st->err = code;
    snprintf(st->msg, sizeof(st->msg), "%s", msg ? msg : "");
}

static int file_bytes(struct post *st, const char *data, size_t size)
{
    st->flen += size;
    if (st->checked && st->flen > st->ok.max_len) {
        set_err(st, HD_ETOOLARGE, "Your proposed upload exceeds the maximum allowed size");
        return -1;
    }
    if (!size)
        return 0;
    if (st->out)
        st->out(st->oarg, data, size);
    else if (hd_buf_append(&st->first, data, size) < 0) {
        set_err(st, -ENOMEM, NULL);
        return -1;
    }
    return 0;
}

/* The post processor's iterator: a field's value (perhaps in pieces), or the file's. */
static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *filename, const char *ctype, const char *te,
                               const char *data, uint64_t off, size_t size)
{
    struct post *st = cls;
    int isfile = strcasecmp(key, "file") == 0;

    (void)kind;
    (void)ctype;
    (void)te;
    if (!data)
        data = "";
    if (st->err)
        return MHD_NO;
    if (st->part == AFTER)
        return MHD_YES; /* AWS ignores the fields after the file */
    if (st->part == FILE_PART) {
        if (!isfile || (off == 0 && st->flen > 0)) {
            st->part = AFTER; /* the file ended: another part */
            return MHD_YES;
        }
        return file_bytes(st, data, size) < 0 ? MHD_NO : MHD_YES;
    }
    if (isfile) {
        st->part = FILE_PART;
        if (filename && !(st->form.filename = strdup(filename))) {
            set_err(st, -ENOMEM, NULL);
            return MHD_NO;
        }
        return file_bytes(st, data, size) < 0 ? MHD_NO : MHD_YES;
    }
    /* a field: a new one, or more of the one being read (the parser may deliver a value in
     * pieces, the first perhaps empty) */
    {
        int more = st->last && strcmp(st->last, key) == 0 && (off > 0 || st->last_len == 0);
        st->pre += size + (more ? 0 : strlen(key));
        if (st->pre > PRE_MAX) {
            set_err(st, HD_EPOSTPRE, NULL);
            return MHD_NO;
        }
        if (!more && st->form.n >= FIELDS_MAX) {
            set_err(st, HD_EPOSTPRE,
                    "Your POST request has more than 1000 fields before the "
                    "upload file.");
            return MHD_NO;
        }
        if (!more) {
            free(st->last);
            st->last = strdup(key);
            st->last_len = 0;
        }
        if (!st->last || hd_post_form_add(&st->form, key, data, size, more) < 0) {
            set_err(st, -ENOMEM, NULL);
            return MHD_NO;
        }
        st->last_len += size;
    }
    return MHD_YES;
}

/* ---- the relay's filter: the rest of the form, and the owner's answer ---- */

static int f_body(void *arg, const char *data, size_t n, hd_relay_out_fn out, void *oarg)
{
    struct post *st = arg;

    st->out = out;
    st->oarg = oarg;
    if (MHD_post_process(st->pp, data, n) != MHD_YES)
        set_err(st, HD_EPOSTFORM, NULL);
    st->out = NULL;
    return st->err;
}

static int f_end(void *arg, hd_relay_out_fn out, void *oarg, const char **msg)
{
    struct post *st = arg;

    if (!st->err && out && st->pp) {
        int whole;
        st->out = out;
        st->oarg = oarg;
        whole = MHD_destroy_post_processor(st->pp) == MHD_YES;
        st->pp = NULL;
        st->out = NULL;
        if (!whole)
            set_err(st, HD_EPOSTFORM,
                    "The body of your POST request is not well-formed multipart/form-data: it "
                    "ends before the form's closing boundary.");
        else if (st->flen < st->ok.min_len)
            set_err(st, HD_ETOOSMALL,
                    "Your proposed upload is smaller than the minimum allowed "
                    "size");
    }
    *msg = st->msg[0] ? st->msg : NULL;
    return st->err;
}

static const char *header_of(const struct hd_kv *h, size_t nh, const char *name)
{
    size_t i;

    for (i = 0; i < nh; i++)
        if (strcasecmp(h[i].k, name) == 0)
            return h[i].v;
    return NULL;
}

/* The object's URL for Location: the scheme and Host the client used. */
static void object_url(struct hd_buf *b, struct hd_req *r, const struct post *st)
{
    const char *host = hd_req_header(r, "Host");

    hd_buf_printf(b, "%s://%s/", strncmp(st->p->self.url, "https:", 6) == 0 ? "https" : "http",
                  host ? host : "localhost");
    if (!st->vhost) {
        hd_uri_encode(b, st->bucket, strlen(st->bucket), 0);
        hd_buf_puts(b, "/");
    }
    hd_uri_encode(b, st->ok.key, strlen(st->ok.key), 1);
}

/* A success_action_redirect S3 can use: http(s), visible characters only (anything else is
 * ignored, as AWS ignores a URL it cannot interpret, and never reaches a header). */
static int url_ok(const char *u)
{
    if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
        return 0;
    for (; *u; u++)
        if ((unsigned char)*u <= ' ' || (unsigned char)*u >= 0x7f)
            return 0;
    return 1;
}

static int f_answer(void *arg, struct hd_req *r, long status, const struct hd_kv *h, size_t nh,
                    const char *body, size_t len)
{
    struct post *st = arg;
    const char *etag = header_of(h, nh, "ETag"), *to, *code;
    struct hd_buf loc, b;
    int rc;

    (void)body;
    (void)len;
    if (status != 200)
        return HD_DECLINED; /* the owner's error, as it is */
    hd_buf_init(&loc);
    hd_buf_init(&b);
    object_url(&loc, r, st);
    if (etag)
        hd_resp_header(r, "ETag", etag);
    to = hd_post_form_get(&st->form, "success_action_redirect");
    if (!to)
        to = hd_post_form_get(&st->form, "redirect");
    code = hd_post_form_get(&st->form, "success_action_status");
    if (to && url_ok(to)) {
        hd_buf_printf(&b, "%s%sbucket=", to, strchr(to, '?') ? "&" : "?");
        hd_uri_encode(&b, st->bucket, strlen(st->bucket), 0);
        hd_buf_puts(&b, "&key=");
        hd_uri_encode(&b, st->ok.key, strlen(st->ok.key), 0);
        hd_buf_puts(&b, "&etag=");
        if (etag)
            hd_uri_encode(&b, etag, strlen(etag), 0);
        rc = b.oom ? -ENOMEM : hd_resp_header(r, "Location", b.data);
        if (rc == 0)
            rc = hd_resp_empty(r, 303);
        hd_buf_cleanup(&b);
    } else if (code && strcmp(code, "201") == 0) {
        hd_resp_header(r, "Location", loc.data);
        hd_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse>");
        hd_xml_elem(&b, "Location", loc.data);
        hd_xml_elem(&b, "Bucket", st->bucket);
        hd_xml_elem(&b, "Key", st->ok.key);
        hd_xml_elem(&b, "ETag", etag ? etag : "");
        hd_buf_puts(&b, "</PostResponse>");
        hd_resp_xml(r, 201, &b); /* takes b (500 when it ran out of memory) */
        rc = 0;
    } else {
        if (!loc.oom)
            hd_resp_header(r, "Location", loc.data);
        rc = hd_resp_empty(r, code && strcmp(code, "200") == 0 ? 200 : 204);
    }
    hd_buf_cleanup(&loc);
    if (rc < 0)
        hd_resp_err(r, -ENOMEM);
    return HD_DONE;
}

static const struct hd_relay_filter filter = {
    .method = "PUT",
    .body = f_body,
    .end = f_end,
    .answer = f_answer,
    .free = post_free,
};

/* ---- the fields become the PUT's headers ---- */

/* Form fields sent on as the PUT's headers (by prefix); the rest are the form's own
 * (key, policy, signature, success_action_*, x-ignore-*, ...) or not supported. */
static const char *const passed[] = {"content-type",
                                     "cache-control",
                                     "content-disposition",
                                     "content-encoding",
                                     "content-language",
                                     "content-md5",
                                     "expires",
                                     "x-amz-meta-",
                                     "x-amz-checksum-",
                                     "x-amz-server-side-encryption",
                                     "x-amz-storage-class",
                                     "x-amz-website-redirect-location",
                                     "x-amz-object-lock-",
                                     "x-amz-grant-",
                                     NULL};

static int prefix_in(const char *name)
{
    size_t i, n;

    for (i = 0; passed[i]; i++) {
        n = strlen(passed[i]);
        if (passed[i][n - 1] == '-' ? strncasecmp(name, passed[i], n) == 0
                                    : strcasecmp(name, passed[i]) == 0)
            return 1;
    }
    return 0;
}

static int token_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') && !(*s >= '0' && *s <= '9') &&
            !strchr("!#$%&'*+-.^_`|~", *s))
            return 0;
    return 1;
}

static int value_ok(const struct hd_post_field *x)
{
    size_t i;

    for (i = 0; i < x->vlen; i++) {
        unsigned char c = (unsigned char)x->value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 0;
    }
    return 1;
}

/* The PUT's headers from the form: into h (HD_PROXY_RELAY_HDRS), strings in st->form or
 * in arena. 0, or the code with st->msg. */
static int put_headers(struct post *st, struct hd_kv *h, size_t *nh, struct hd_buf *tags)
{
    size_t i;
    int rc;

    *nh = 0;
    for (i = 0; i < st->form.n; i++) {
        struct hd_post_field *x = &st->form.v[i];
        const char *name = x->name;
        if (strcasecmp(name, "acl") == 0)
            name = "x-amz-acl";
        else if (strcasecmp(name, "tagging") == 0)
            name = "x-amz-tagging";
        else if (!prefix_in(name))
            continue;
        if (!token_ok(name) || !value_ok(x)) {
            snprintf(st->msg, sizeof(st->msg),
                     "The form field %.64s cannot be stored: its name or value holds a control "
                     "character.",
                     x->name);
            return HD_EBADARG;
        }
        if (*nh >= HD_PROXY_RELAY_HDRS - 1) {
            snprintf(st->msg, sizeof(st->msg), "The form has too many fields to store.");
            return HD_EMETATOOLARGE;
        }
        if (strcmp(name, "x-amz-tagging") == 0) { /* the form's XML, the header's query form */
            char *json = NULL;
            json_t *j;
            const char *k;
            json_t *v;
            if ((rc = hd_tags_parse_xml(x->value, x->vlen, &json)) < 0) {
                st->msg[0] = '\0';
                return rc;
            }
            j = json ? json_loads(json, 0, NULL) : NULL;
            free(json);
            json_object_foreach(j, k, v)
            {
                if (tags->len)
                    hd_buf_puts(tags, "&");
                hd_uri_encode(tags, k, strlen(k), 0);
                hd_buf_puts(tags, "=");
                hd_uri_encode(tags, json_string_value(v), strlen(json_string_value(v)), 0);
            }
            json_decref(j);
            if (tags->oom || hd_buf_append(tags, "", 1) < 0)
                return -ENOMEM;
            h[(*nh)++] = (struct hd_kv){name, tags->data};
            continue;
        }
        h[(*nh)++] = (struct hd_kv){name, x->value};
    }
    return 0;
}

/* The fields are in and the file has begun: check the form, then stream the file to the
 * owner. rest[0..n) is what this body call has not parsed yet. Returns on_body's result. */
static int upload(struct hd_req *r, struct post *st, const char *rest, size_t n, size_t taken)
{
    struct hd_post_in in = {st->bucket, time(NULL), &st->p->keys};
    struct hd_kv h[HD_PROXY_RELAY_HDRS];
    struct hd_buf tags;
    size_t nh = 0;
    int rc;

    rc = hd_post_check(&st->form, &in, &st->ok, st->msg, sizeof(st->msg));
    if (rc == 0) {
        st->checked = 1;
        if (st->flen > st->ok.max_len) {
            rc = HD_ETOOLARGE;
            snprintf(st->msg, sizeof(st->msg),
                     "Your proposed upload exceeds the maximum allowed size");
        } else if ((rc = hd_object_name_check(st->ok.key, strlen(st->ok.key))) < 0) {
            st->msg[0] = '\0';
        }
    }
    hd_buf_init(&tags);
    if (rc == 0)
        rc = put_headers(st, h, &nh, &tags);
    if (rc < 0) { /* answered once the body is read (MHD takes no answer in between) */
        HD_LOG(HD_INFO, r->id, "POST Object to %s refused: %s", st->bucket,
               st->msg[0] ? st->msg : hd_strerror(rc));
        st->err = rc;
        hd_buf_cleanup(&tags);
        hd_buf_cleanup(&st->first);
        return 0;
    }
    if (st->ok.access[0])
        snprintf(r->principal, sizeof(r->principal), "key %s", st->ok.access);
    /* the relay installs its own hooks and owns st once started */
    rc = hd_proxy_relay_filtered(r, st->p, st->bucket, st->ok.key, h, nh, &filter, st,
                                 st->first.data, st->first.len, st->msg, sizeof(st->msg));
    hd_buf_cleanup(&tags);
    if (rc < 0) { /* st stays ours: answered at the end */
        st->err = rc;
        hd_buf_cleanup(&st->first);
        return 0;
    }
    if (!n)
        return 0;
    rc = r->on_body(r, rest, n);
    if (rc <= 0)
        return rc;
    return (int)(taken + (rc == HD_BODY_WAIT ? 0 : (size_t)rc));
}

static int post_body(struct hd_req *r, const char *data, size_t len)
{
    struct post *st = r->data;
    size_t taken = 0, n;

    while (taken < len && st->part == FIELDS && !st->err) {
        n = len - taken < SLICE ? len - taken : SLICE;
        if (MHD_post_process(st->pp, data + taken, n) != MHD_YES)
            set_err(st, HD_EPOSTFORM, NULL);
        taken += n;
    }
    if (st->err || st->part == FIELDS)
        return 0; /* an error is answered at the end (post_end) */
    return upload(r, st, data + taken, len - taken, taken);
}

/* The body ended before any file (or the form was empty). */
static void post_end(struct hd_req *r)
{
    struct post *st = r->data;

    if (st->err) {
        hd_resp_err_msg(r, st->err, st->msg[0] ? st->msg : NULL);
        return;
    }
    hd_resp_err_msg(r, HD_EBADARG, "POST requires exactly one file upload per request.");
}

static void post_done(struct hd_req *r)
{
    post_free(r->data);
    r->data = NULL;
}

void hd_proxy_post_object(struct hd_req *r, struct hd_proxy *p, const char *bucket, int vhost)
{
    struct post *st;
    int rc;

    if ((rc = hd_proxy_bucket_known(p, bucket)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (!hd_req_secure(r) && hd_proxy_tls_only(p, bucket)) {
        hd_resp_err(r, HD_EACCESS); /* the bucket's policy: TLS only */
        return;
    }
    if (!(st = calloc(1, sizeof(*st))) || !(st->bucket = strdup(bucket))) {
        free(st);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    st->magic = POST_MAGIC;
    st->p = p;
    st->vhost = vhost;
    hd_buf_init(&st->first);
    st->pp = MHD_create_post_processor(r->conn, PP_BUF, on_part, st);
    if (!st->pp) {
        post_free(st);
        hd_resp_err_msg(r, HD_EPOSTFORM,
                        "The body of your POST request is not well-formed multipart/form-data: "
                        "the Content-Type names no boundary.");
        return;
    }
    r->data = st;
    r->on_body = post_body;
    r->on_end = post_end;
    r->on_done = post_done;
}
