/* ais: the AIStore REST shapes the AIStore Python SDK sends and parses (docs/aistore-compat.md):
 * cluster map queries (/v1/daemon?what=, /v1/cluster?what=), the AuthN-style login that issues
 * bearer tokens (POST /v1/users/NAME), list-buckets and list-objects action messages with
 * AIStore's list result (JSON, or msgpack on Accept: application/msgpack). HTTP workers. */
#include "proxy/api/api.h"
#include "proxy/cluster/cluster.h"
#include "proxy/data/data.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aismsg.h"
#include "common/buf.h"
#include "common/cksum.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httpc.h"
#include "common/httputil.h"
#include "common/jsonpack.h"
#include "common/kdf.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/token.h"

#define LOGIN_BODY_MAX 4096
#define LS_CACHED 1u       /* AIStore's apc.LsCached: only what the cluster holds */
#define LS_NAME_ONLY 16u   /* apc.LsNameOnly */
#define LS_NAME_SIZE 32u   /* apc.LsNameSize */
#define LS_ARCH_DIR 8u     /* apc.LsArchDir: list the members of archives as entries too */
#define ENTRY_CACHED 64u   /* cmn.EntryIsCached in an entry's "f" */
#define ENTRY_IN_ARCH 128u /* cmn.EntryInArch */
#define PAGE_DEFAULT 1000  /* pagesize 0 */
#define PAGE_MAX 10000
#define PAGE_ARCH_MAX 100 /* with ARCH_DIR: each shard costs a call for its members */

/* JSON, or msgpack when the client asks for it. Takes j. */
static void answer(struct hd_req *r, int status, json_t *j)
{
    char *data;
    size_t len;

    if (j && hd_jsonpack_wanted(hd_req_header(r, "Accept")) && hd_jsonpack(j, &data, &len) == 0) {
        json_decref(j);
        hd_resp_buf(r, status, "application/msgpack", data, len);
        return;
    }
    hd_resp_json(r, status, j);
}

/* ---- cluster map: GET /v1/daemon?what=X, GET /v1/cluster?what=X ---- */

void hd_proxy_ais_daemon(struct hd_req *r, struct hd_proxy *p)
{
    const char *what = hd_req_param(r, "what");
    struct hd_sigv4_auth a;
    struct hd_smap *s;
    struct hd_bmd *b;
    const struct hd_node *me;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if (strcmp(r->method, "GET") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    if ((rc = hd_proxy_auth(r, p, NULL, &a)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (!what || !*what)
        what = "smap";
    if (strcmp(what, "status") == 0 || strcmp(what, "qryxstats") == 0 ||
        strcmp(what, "status_all") == 0 || strcmp(what, "running_all") == 0) { /* aisjobs.c */
        hd_proxy_ais_xact(r, p, what);
        return;
    }
    if (strcmp(what, "bmd") == 0) {
        b = hd_smap_state_bmd(p->cs);
        hd_resp_json(r, 200, hd_bmd_to_json(b));
        hd_bmd_unref(b);
        return;
    }
    s = hd_smap_state_smap(p->cs);
    if (!s) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "This proxy has not joined a cluster yet.");
    } else if (strcmp(what, "smap") == 0) {
        hd_resp_json(r, 200, hd_smap_to_json(s));
    } else if (strcmp(what, "snode") == 0 && (me = hd_smap_find(s, p->self.id))) {
        hd_resp_json(r, 200, hd_smap_node_to_json(me));
    } else {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "what= supports smap, bmd, snode, status, status_all, running_all and "
                        "qryxstats (docs/aistore-compat.md).");
    }
    hd_smap_unref(s);
}

/* The checks of the AuthN-style calls: the method, and tokens configured. 0, or -1 when r
 * was answered. */
static int tokens_call(struct hd_req *r, struct hd_proxy *p, const char *method)
{
    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if (strcmp(r->method, method) != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return -1;
    }
    if (!*p->secret || p->keys.n == 0) {
        hd_resp_err_msg(r, HD_ENOTIMPL,
                        "Bearer tokens need auth.keys and cluster.secret (docs/security.md).");
        return -1;
    }
    return 0;
}

/* ---- AuthN-style login: POST /v1/users/NAME {"password": SECRET, "expires_in": N} ---- */

/* Refused logins per client address: after LOGIN_FAIL_MAX in one window of LOGIN_WINDOW_S
 * seconds, every login from that address is refused (503 SlowDown with Retry-After) until the
 * window ends, so guessing a secret is slow, while other addresses log in as usual. The table
 * is small and fixed: an address takes its hash's slot once the window there has ended (two
 * addresses that share a live slot share its count). */
#define LOGIN_FAIL_MAX 10
#define LOGIN_WINDOW_S 60
#define LOGIN_SLOTS 1024

static struct login_slot {
    char addr[64];
    time_t start;
    int fails;
} login_slots[LOGIN_SLOTS];
static pthread_mutex_t login_mu = PTHREAD_MUTEX_INITIALIZER;

static struct login_slot *login_slot(const char *addr, time_t now)
{
    struct login_slot *sl = &login_slots[hd_hrw_digest(addr, strlen(addr)) % LOGIN_SLOTS];

    if (now - sl->start >= LOGIN_WINDOW_S || now < sl->start) {
        snprintf(sl->addr, sizeof(sl->addr), "%s", addr);
        sl->start = now;
        sl->fails = 0;
    }
    return sl;
}

/* Seconds until addr may log in again (0: now). */
static long login_wait(const char *addr)
{
    time_t now = time(NULL);
    struct login_slot *sl;
    long wait = 0;

    pthread_mutex_lock(&login_mu);
    sl = login_slot(addr, now);
    if (sl->fails >= LOGIN_FAIL_MAX)
        wait = (long)(sl->start + LOGIN_WINDOW_S - now);
    pthread_mutex_unlock(&login_mu);
    return wait;
}

static void login_refused(const char *addr)
{
    pthread_mutex_lock(&login_mu);
    login_slot(addr, time(NULL))->fails++;
    pthread_mutex_unlock(&login_mu);
}

struct login {
    struct hd_proxy *p;
    char user[HD_SIGV4_AK_MAX];
    char addr[64];
};

static void login_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct login *l = ctx;
    struct hd_proxy *p = l->p;
    const struct hd_key *k = hd_keys_find(&p->keys, l->user);
    const char *pw = json_string_value(json_object_get(j, "password"));
    json_t *ex = json_object_get(j, "expires_in");
    char tok[HD_TOKEN_MAX];
    long ttl = HD_TOKEN_TTL_DEFAULT;
    double v;
    int rc;

    /* an unknown key costs the same comparison as a wrong password */
    if (!hd_kdf_equal(k ? k->secret : "-unknown-key-", pw) || !k) {
        hd_stats_inc(HD_ST_AUTH_FAILED);
        login_refused(l->addr);
        hd_resp_err_msg(r, HD_EACCESS, "invalid credentials");
        return;
    }
    if (json_is_number(ex) && (v = json_number_value(ex)) > 0) {
        v = v >= 1e9 ? v / 1e9 : v; /* Go's time.Duration (ns), or seconds */
        ttl = v >= HD_TOKEN_TTL_MAX ? HD_TOKEN_TTL_MAX : v < 1 ? 1 : (long)v;
    }
    rc = hd_token_issue(p->secret, l->user, ttl, time(NULL), tok, sizeof(tok));
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    hd_resp_json(r, 200, json_pack("{s:s}", "token", tok));
}

void hd_proxy_ais_login(struct hd_req *r, struct hd_proxy *p)
{
    const char *name = r->raw_path + strlen("/v1/users/");
    struct login *l;
    char ra[64], addr[64], after[24];
    long wait;

    if (tokens_call(r, p, "POST") < 0)
        return;
    snprintf(addr, sizeof(addr), "%s", hd_req_remote(r, ra, sizeof(ra)));
    if ((wait = login_wait(addr)) > 0) {
        HD_LOG(HD_WARN, r->id, "login from %s refused: %d refused logins in %d s", addr,
               LOGIN_FAIL_MAX, LOGIN_WINDOW_S);
        snprintf(after, sizeof(after), "%ld", wait);
        hd_resp_header(r, "Retry-After", after);
        hd_resp_err_msg(r, HD_ESLOWDOWN,
                        "Too many refused logins from this address: try again later.");
        return;
    }
    if (!*name || strlen(name) >= sizeof(l->user) || strchr(name, '/') || strchr(name, '%')) {
        hd_resp_err_msg(r, HD_EACCESS, "invalid credentials");
        return;
    }
    if (!(l = calloc(1, sizeof(*l)))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    l->p = p;
    snprintf(l->user, sizeof(l->user), "%s", name);
    snprintf(l->addr, sizeof(l->addr), "%s", addr);
    hd_req_read_json(r, LOGIN_BODY_MAX, login_end, l, free);
}

/* ---- AuthN-style revocation: DELETE /v1/tokens {"token": T} (AuthNClient.logout(),
 * TokenManager.revoke()) ---- */

struct revoke {
    struct hd_proxy *p;
    struct hd_sigv4_auth a; /* who asks */
};

static void revoke_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct revoke *c = ctx;
    const char *tok = json_string_value(json_object_get(j, "token")), *why = NULL;
    const struct hd_key *k;
    char user[HD_SIGV4_AK_MAX], id[65];
    time_t exp = 0;
    int rc;

    if (!tok || json_string_length(json_object_get(j, "token")) >= HD_TOKEN_MAX ||
        strlen(tok) != json_string_length(json_object_get(j, "token"))) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"token\": TOKEN}.");
        return;
    }
    rc = hd_token_verify(c->p->secret, tok, time(NULL), user, sizeof(user), &exp, &why);
    if (rc == HD_EEXPIRED) { /* nothing left to revoke */
        hd_resp_empty(r, 200);
        return;
    }
    if (rc < 0) {
        hd_resp_err_msg(r, HD_EBADARG, "Not a token of this cluster.");
        return;
    }
    /* a key revokes its own tokens; a key with rw on every bucket any (another proxy
     * forwarding to the primary was authorised there) */
    if ((c->a.anonymous || c->a.access_key[0]) && strcmp(user, c->a.access_key) != 0 &&
        !((k = hd_keys_find(&c->p->keys, c->a.access_key)) && k->all == HD_PERM_RW)) {
        hd_resp_err_msg(r, HD_EACCESS, "Only the token's own key or an admin key may revoke it.");
        return;
    }
    if ((rc = hd_token_id(tok, id)) < 0 ||
        (rc = hd_proxy_token_revoke(c->p, tok, id, (int64_t)exp)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    HD_LOG(HD_INFO, r->id, "auth: a token of %s revoked by %s", user,
           r->principal[0] ? r->principal : "a proxy");
    hd_resp_empty(r, 200);
}

void hd_proxy_ais_tokens(struct hd_req *r, struct hd_proxy *p)
{
    struct revoke *c;
    int rc;

    if (tokens_call(r, p, "DELETE") < 0)
        return;
    if (!(c = calloc(1, sizeof(*c)))) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    c->p = p;
    if ((rc = hd_proxy_auth(r, p, NULL, &c->a)) < 0) { /* before the body is read */
        free(c);
        hd_resp_err(r, rc);
        return;
    }
    hd_req_read_json(r, LOGIN_BODY_MAX, revoke_end, c, free);
}

/* ---- Object.copy(): PUT /v1/objects/SB/SO?object_to=PROVIDER/@#/DB/DO ---- */

/* A uname (AIStore's "PROVIDER/@NS/BUCKET/OBJECT", meta.ParseUname) into bucket and object
 * (heap, decoded already): the bucket part as ?bck_to= (aismsg.h), then a valid object name.
 * 0, or HD_EBADARG / -ENOMEM with msg set. */
static int uname_parse(const char *u, char **bucket, char **key, char *msg, size_t msglen)
{
    const char *s1 = strchr(u, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    const char *s3 = s2 ? strchr(s2 + 1, '/') : NULL;
    char prov[8], name[64], *head;
    int rc;

    *bucket = *key = NULL;
    snprintf(msg, msglen,
             "object_to: expected PROVIDER/@#/BUCKET/OBJECT (Bucket.get_path() + "
             "object name).");
    if (!s3 || !s3[1])
        return HD_EBADARG;
    if (!(head = strndup(u, (size_t)(s3 - u + 1))))
        return -ENOMEM;
    rc = hd_ais_bck_parse(head, prov, sizeof(prov), name, sizeof(name), msg, msglen);
    free(head);
    if (rc < 0)
        return rc;
    if (hd_object_name_check(s3 + 1, strlen(s3 + 1)) < 0) {
        snprintf(msg, msglen, "object_to: not a valid object name.");
        return HD_EBADARG;
    }
    *bucket = strdup(name);
    *key = strdup(s3 + 1);
    if (!*bucket || !*key) {
        free(*bucket);
        free(*key);
        *bucket = *key = NULL;
        return -ENOMEM;
    }
    return 0;
}

static int param_true(struct hd_req *r, const char *name)
{
    const char *v = hd_req_param(r, name);

    return v && strcmp(v, "true") == 0;
}

void hd_proxy_ais_copy_object(struct hd_req *r, struct hd_proxy *p, const char *sb, const char *sk)
{
    const char *msg = NULL;
    const struct hd_key *k;
    struct hd_sigv4_auth a;
    struct hd_buf path, src, q;
    char *db = NULL, *dk = NULL, why[160];
    int rc;

    r->op = HD_OP_PUT;
    if ((rc = uname_parse(hd_req_param(r, "object_to"), &db, &dk, why, sizeof(why))) < 0) {
        hd_resp_err_msg(r, rc, why);
        return;
    }
    hd_buf_init(&path);
    hd_buf_init(&src);
    hd_buf_init(&q);
    /* the destination is written, the source read: the caller needs both */
    if ((rc = hd_proxy_auth(r, p, db, &a)) < 0)
        goto fail;
    if (!hd_proxy_auth_by_node(&a) && (rc = hd_proxy_tls_check(r, p, sb)) < 0)
        goto fail; /* the source bucket's policy: TLS only */
    if (!a.anonymous && a.access_key[0] &&
        (!(k = hd_keys_find(&p->keys, a.access_key)) || hd_key_allows(k, sb, 0) < 0)) {
        rc = HD_EACCESS;
        goto fail;
    }
    if (param_true(r, "latest-ver") || param_true(r, "synchronize") ||
        hd_req_param(r, "etl_name")) {
        rc = HD_ENOTIMPL;
        msg = "Object.copy(): latest, sync and etl are not supported; a copy reads what the "
              "cluster holds (docs/aistore-compat.md).";
        goto fail;
    }
    hd_buf_puts(&path, "/v1/objects/");
    hd_uri_encode(&path, db, strlen(db), 0);
    hd_buf_puts(&path, "/");
    hd_uri_encode(&path, dk, strlen(dk), 1);
    hd_buf_puts(&src, "/");
    hd_uri_encode(&src, sb, strlen(sb), 0);
    hd_buf_puts(&src, "/");
    hd_uri_encode(&src, sk, strlen(sk), 1);
    hd_buf_puts(&q, "object_from=");
    if (!src.oom)
        hd_uri_encode(&q, src.data, src.len, 0);
    if (path.oom || src.oom || q.oom) {
        rc = -ENOMEM;
        goto fail;
    }
    /* to the destination's owner, which reads the source from wherever it is held */
    if (p->native_redirect)
        hd_proxy_redirect_copy(r, p, db, dk, path.data, q.data, src.data);
    else
        hd_proxy_relay_path(r, p, db, dk, path.data, q.data);
    goto out;
fail:
    hd_resp_err_msg(r, rc, msg);
out:
    hd_buf_cleanup(&path);
    hd_buf_cleanup(&src);
    hd_buf_cleanup(&q);
    free(db);
    free(dk);
}

/* ---- Object.multipart_upload().create(): POST /v1/objects/B/O {"action":"mpt-upload"} ---- */

struct mpt_create {
    struct hd_proxy *p;
    char *bucket, *key;
};

static void mpt_create_free(void *arg)
{
    struct mpt_create *mc = arg;

    free(mc->bucket);
    free(mc->key);
    free(mc);
}

/* The body checked, the owner creates the upload (a signed call; its answer, the id as
 * text, goes back as it is). */
static void mpt_create_end(struct hd_req *r, void *ctx, json_t *j)
{
    struct mpt_create *mc = ctx;
    const char *act = json_string_value(json_object_get(j, "action"));
    char *base = NULL, id[HD_NODE_ID_MAX], msg[256];
    struct hd_httpc_call c;
    struct hd_buf url;
    json_t *e;
    int rc;

    if (!act || strcmp(act, "mpt-upload") != 0) {
        hd_resp_err_msg(r, act ? HD_ENOTIMPL : HD_EBADARG,
                        "POST /v1/objects/B/O: the action mpt-upload only (AIStore's "
                        "Object.multipart_upload(), docs/aistore-compat.md).");
        return;
    }
    if ((rc = hd_proxy_owner(mc->p, mc->bucket, mc->key, hd_req_param(r, "provider"), &base, id,
                             NULL, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    hd_buf_init(&url);
    hd_buf_printf(&url, "%s%s%s%s", base, r->raw_path, *r->raw_query ? "?" : "", r->raw_query);
    free(base);
    if (url.oom) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_httpc_call_init(&c, "POST", url.data);
    c.na = mc->p->na;
    snprintf(c.to, sizeof(c.to), "%s", id);
    c.body = "";
    c.blen = 0;
    c.total_ms = HD_PROXY_SYNC_MS;
    hd_httpc_run_all(&c, 1, 0);
    if (c.rc < 0) {
        hd_resp_err_msg(r, HD_EUNAVAIL, "The object's target did not answer; retry shortly.");
    } else if (c.status != 200) {
        e = hd_proxy_call_json(&c);
        hd_resp_err_msg(r, hd_proxy_err_from_json(c.status, e),
                        json_string_value(json_object_get(e, "message")));
        json_decref(e);
    } else {
        char *body = c.resp.len ? hd_buf_steal(&c.resp, NULL) : NULL;
        if (!body)
            hd_resp_err_msg(r, HD_EINTERNAL, "The object's target answered no upload id.");
        else
            hd_resp_buf(r, 200, "text/plain", body, strlen(body));
    }
    hd_httpc_call_cleanup(&c);
    hd_buf_cleanup(&url);
}

void hd_proxy_ais_mpt_create(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                             const char *key)
{
    struct mpt_create *mc = calloc(1, sizeof(*mc));

    if (!mc || !(mc->bucket = strdup(bucket)) || !(mc->key = strdup(key))) {
        if (mc)
            mpt_create_free(mc);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    mc->p = p;
    hd_req_read_json(r, LOGIN_BODY_MAX, mpt_create_end, mc, mpt_create_free);
}

/* ---- list buckets: GET /v1/buckets {"action":"list"}?provider= ---- */

void hd_proxy_ais_list_buckets(struct hd_req *r, struct hd_proxy *p)
{
    const char *pv = hd_req_param(r, "provider");
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    json_t *arr = json_array();
    size_t i;

    if (pv && strcmp(pv, "s3") == 0)
        pv = "aws";
    for (i = 0; b && i < b->n; i++) {
        if (pv && *pv && strcmp(pv, b->b[i].provider) != 0)
            continue;
        json_array_append_new(arr, json_pack("{s:s, s:s, s:{s:s, s:s}}", "name", b->b[i].name,
                                             "provider", b->b[i].provider, "namespace", "uuid", "",
                                             "name", ""));
    }
    hd_bmd_unref(b);
    hd_resp_json(r, 200, arr);
}

/* ---- list objects: GET /v1/buckets/B {"action":"list","value":{ListObjectsMsg}} ---- */

static int has_prop(const char *props, const char *name)
{
    size_t n = strlen(name);
    const char *s = props;

    while (s && *s) {
        if (strncmp(s, name, n) == 0 && (s[n] == ',' || s[n] == '\0'))
            return 1;
        s = strchr(s, ',');
        if (s)
            s++;
    }
    return 0;
}

/* AIStore sends its flags as a decimal string; an integer is taken too. */
static int flags_of(const json_t *v, unsigned long long *out)
{
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (unsigned long long)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        uint64_t u;
        if (!*json_string_value(v))
            return 0;
        if (hd_parse_u64(json_string_value(v), &u) < 0)
            return HD_EBADARG;
        *out = u;
        return 0;
    }
    return HD_EBADARG;
}

/* The members of tar object name (GET ?members on its owner, signed): a JSON array of
 * {"name","size"}, or NULL when it is not a tar hoard can read, or on any failure (the
 * listing then shows the object alone). */
static json_t *arch_members(struct hd_proxy *p, const char *bucket, const char *name)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *owner = NULL;
    struct hd_httpc_call c;
    struct hd_buf u;
    char *uname = NULL;
    size_t ulen;
    json_t *j = NULL, *m = NULL;

    hd_buf_init(&u);
    if (!s || hd_proxy_uname(p, bucket, name, &uname, &ulen) < 0 ||
        hd_smap_owner(s, uname, ulen, &owner) < 0 || !owner)
        goto out;
    hd_buf_printf(&u, "%s/v1/objects/", owner->url);
    hd_uri_encode(&u, bucket, strlen(bucket), 0);
    hd_buf_puts(&u, "/");
    hd_uri_encode(&u, name, strlen(name), 1);
    hd_buf_puts(&u, "?members");
    if (u.oom)
        goto out;
    hd_httpc_call_init(&c, "GET", u.data);
    hd_proxy_call_sign(p, &c);
    c.total_ms = HD_PROXY_FANOUT_MS;
    hd_httpc_run_all(&c, 1, 0);
    if (c.rc == 0 && c.status == 200 && c.resp.len)
        j = json_loadb(c.resp.data, c.resp.len, 0, NULL);
    hd_httpc_call_cleanup(&c);
    m = json_object_get(j, "members");
    if (json_is_array(m))
        json_incref(m);
    else
        m = NULL;
out:
    json_decref(j);
    free(uname);
    hd_buf_cleanup(&u);
    hd_smap_unref(s);
    return m;
}

/* 1 when name ends in an archive extension AIStore lists the members of (cmn/archive):
 * tar, and the compressed tars and zips the targets read in order. */
static int archive_name(const char *name)
{
    static const char *const exts[] = {".tar",     ".tgz",     ".tar.gz", ".zip",
                                       ".tar.lz4", ".tar.zst", ".tar.xz", ".tar.bz2"};
    size_t i, n = strlen(name);

    for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
        if (n > strlen(exts[i]) && strcmp(name + n - strlen(exts[i]), exts[i]) == 0)
            return 1;
    return 0;
}

/* Appends name's members as entries "name/member" (AIStore's list_archive). */
static void add_members(struct hd_proxy *p, const char *bucket, const char *name, json_t *ents,
                        int with_size)
{
    json_t *m = arch_members(p, bucket, name), *v;
    size_t i;

    json_array_foreach(m, i, v)
    {
        const char *mn = json_string_value(json_object_get(v, "name"));
        char *full;
        json_t *e;
        if (!mn || asprintf(&full, "%s/%s", name, mn) < 0)
            continue;
        e = json_pack("{s:s, s:I}", "n", full, "f", (json_int_t)(ENTRY_CACHED | ENTRY_IN_ARCH));
        free(full);
        if (e && with_size)
            json_object_set(e, "s", json_object_get(v, "size"));
        if (e)
            json_array_append_new(ents, e);
    }
    json_decref(m);
}

/* 1 when o[key] is a string, JSON null or absent. */
static int string_or_absent(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);

    return !v || json_is_string(v) || json_is_null(v);
}

void hd_proxy_ais_list_objects(struct hd_req *r, struct hd_proxy *p, const char *bucket,
                               const json_t *value)
{
    const char *prefix = json_string_value(json_object_get(value, "prefix"));
    const char *props = json_string_value(json_object_get(value, "props"));
    const char *tok = json_string_value(json_object_get(value, "continuation_token"));
    json_t *ps = json_object_get(value, "pagesize"), *ents, *j;
    unsigned long long flags;
    struct hd_plist_opts o;
    struct hd_plist_res res;
    unsigned char raw[1100];
    char msg[256], t64[1500];
    json_int_t page = PAGE_DEFAULT;
    size_t i;
    int rc;

    r->op = HD_OP_LIST;
    memset(&o, 0, sizeof(o));
    if ((value && !json_is_object(value)) ||
        flags_of(json_object_get(value, "flags"), &flags) < 0 || (ps && !json_is_integer(ps)) ||
        !string_or_absent(value, "prefix") || !string_or_absent(value, "props") ||
        !string_or_absent(value, "continuation_token")) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "list message: prefix, props and continuation_token are strings, "
                        "pagesize an integer, flags a decimal string.");
        return;
    }
    if ((flags & LS_ARCH_DIR) && r->public_grant && !hd_proxy_public(p, bucket, NULL, HD_PUB_READ)) {
        /* a caller let in by a public listing, which opens names, not the archives' content */
        hd_resp_err_msg(r, HD_EACCESS,
                        "list message: flags 8 (the members of archives) reads the archives: "
                        "it needs read access to the bucket's objects.");
        return;
    }
    if (json_is_integer(ps) && json_integer_value(ps) > 0)
        page = json_integer_value(ps) > PAGE_MAX ? PAGE_MAX : json_integer_value(ps);
    if ((flags & LS_ARCH_DIR) && page > PAGE_ARCH_MAX) /* one call to a target per shard */
        page = PAGE_ARCH_MAX;
    if (tok && *tok) {
        if (hd_proxy_list_token(tok, raw, sizeof(raw)) < 0) {
            hd_resp_err(r, HD_EBADTOKEN);
            return;
        }
        o.start_after = (const char *)raw;
    }
    o.prefix = prefix && *prefix ? prefix : NULL;
    o.limit = (size_t)page;
    o.cached_only = (flags & LS_CACHED) != 0;
    if ((rc = hd_proxy_list(p, bucket, &o, &res, msg, sizeof(msg))) < 0) {
        hd_resp_err_msg(r, rc, msg[0] ? msg : NULL);
        return;
    }
    if (!props || !*props)
        props = flags & LS_NAME_ONLY ? "name" : "name,size";
    else if (flags & LS_NAME_ONLY)
        props = "name";
    else if (flags & LS_NAME_SIZE)
        props = "name,size";
    ents = json_array();
    for (i = 0; i < res.n; i++) {
        const struct hd_plist_item *it = &res.items[i];
        json_t *e;
        if (it->is_prefix)
            continue;
        e = json_pack("{s:s}", "n", it->name);
        if (!e)
            break;
        if (has_prop(props, "size"))
            json_object_set_new(e, "s", json_integer((json_int_t)it->size));
        if (has_prop(props, "checksum") && it->etag[0])
            json_object_set_new(e, "cs", json_string(it->etag));
        if (has_prop(props, "atime") && it->mtime[0])
            json_object_set_new(e, "a", json_string(it->mtime));
        if (has_prop(props, "version") && it->etag[0])
            json_object_set_new(e, "v", json_string(it->etag));
        if (has_prop(props, "copies"))
            json_object_set_new(e, "c", json_integer(1));
        json_object_set_new(e, "f", json_integer(it->cached == 0 ? 0 : ENTRY_CACHED));
        json_array_append_new(ents, e);
        if ((flags & LS_ARCH_DIR) && it->cached != 0 && archive_name(it->name))
            add_members(p, bucket, it->name, ents, has_prop(props, "size"));
    }
    t64[0] = '\0';
    if (res.truncated && res.last &&
        hd_b64_encode((const unsigned char *)res.last, strlen(res.last), t64, sizeof(t64)) < 0)
        t64[0] = '\0';
    hd_proxy_list_cleanup(&res);
    /* the names AIStore's msgp encoder writes (the SDK decodes these, msgpack or JSON) */
    j = json_pack("{s:s, s:s, s:I, s:o}", "UUID", r->id, "ContinuationToken", t64, "Flags",
                  (json_int_t)0, "Entries", ents);
    answer(r, 200, j);
}
