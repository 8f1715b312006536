#include "target/object/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <archive.h>
#include <jansson.h>

#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/pool.h"
#include "common/tarindex.h"
#include "common/tarstream.h"
#include "target/object/object.h"
#include "target/store/tar.h"

int hd_arch_wanted(const struct hd_req *r)
{
    const char *rx = hd_req_param(r, "archregx");

    return hd_query_find(&r->query, "archpath") || hd_query_find(&r->query, "members") ||
           (rx && *rx);
}

/* ---- indexing ---- */

struct collect {
    struct hd_tar_ent *v;
    size_t n, cap;
};

static int collect_one(void *arg, const struct hd_tar_member *m)
{
    struct collect *c = arg;

    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct hd_tar_ent *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    if (!(c->v[c->n].name = strdup(m->name)))
        return -ENOMEM;
    c->v[c->n].off = m->off;
    c->v[c->n].size = m->size;
    c->n++;
    return 0;
}

int hd_arch_index(struct hd_store *st, const char *bucket, const char *key,
                  const struct hd_obj_meta *m, int fd, uint64_t *members, char *msg, size_t msglen)
{
    struct collect c = {NULL, 0, 0};
    uint64_t n = 0;
    size_t i;
    int rc, src;

    rc = hd_store_tar_state(st, m, &n, msg, msglen);
    if (rc <= 0) {
        if (rc == 0 && members)
            *members = n;
        return rc;
    }
    src = hd_tarindex_fd(fd, m->size, collect_one, &c, NULL, msg, msglen);
    if (src == 0 || src == HD_ENOTARCHIVE) { /* a verdict about these bytes: keep it */
        rc = hd_store_tar_save(st, bucket, key, m, c.v, c.n, src, src ? msg : NULL);
        if (rc == 0)
            rc = src;
        if (src == 0)
            HD_LOG(HD_DEBUG, NULL, "indexed %s/%s: %zu members", bucket, key, c.n);
    } else {
        rc = src;
    }
    if (rc == 0 && members)
        *members = c.n;
    for (i = 0; i < c.n; i++)
        free(c.v[i].name);
    free(c.v);
    return rc;
}

/* ---- serving ---- */

struct list_ctx {
    json_t *arr;
};

static int list_one(void *arg, const char *name, uint64_t off, uint64_t size)
{
    struct list_ctx *l = arg;
    json_t *e = json_pack("{s:s, s:I, s:I}", "name", name, "offset", (json_int_t)off, "size",
                          (json_int_t)size);

    if (!e || json_array_append_new(l->arr, e) < 0)
        return -ENOMEM;
    return 0;
}

static void list_members(struct hd_req *r, struct hd_store *st, const char *bucket, const char *key,
                         const struct hd_obj_meta *m)
{
    struct list_ctx l = {json_array()};
    json_t *j;
    size_t len;
    char *s;
    int rc;

    if (!l.arr || (rc = hd_store_tar_list(st, m, list_one, &l)) < 0) {
        json_decref(l.arr);
        hd_resp_err(r, l.arr ? rc : -ENOMEM);
        return;
    }
    j = json_pack("{s:s, s:s, s:I, s:I, s:o}", "bucket", bucket, "name", key, "size",
                  (json_int_t)m->size, "count", (json_int_t)json_array_size(l.arr), "members",
                  l.arr);
    s = j ? hd_json_dump_steal(j, &len) : NULL;
    if (!s) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, 200, "application/json", s, len);
}

/* ---- several members: ?archregx=R&archmode=M (AIStore's ArchiveConfig(regex, mode)) ----
 * The members whose names match, in archive order, as a tar of their own (what AIStore
 * answers for a tar), built in memory up to SELECT_MAX. Modes as AIStore's cmn/archive:
 * regexp (searched anywhere in the name; POSIX extended syntax here, Go's RE2 there, which
 * agree on the common subset), prefix, suffix, substr, wdskey (the name without the
 * extension of its last component, and without a leading '/', equals R). */

#define SELECT_MAX ((uint64_t)64 << 20)
#define REGEX_MAX 512

enum selmode { SEL_REGEXP, SEL_PREFIX, SEL_SUFFIX, SEL_SUBSTR, SEL_WDSKEY };

struct select {
    enum selmode mode;
    const char *rx;
    regex_t re;
    int fd;
    struct hd_tar_ent *v;
    size_t n, cap;
    uint64_t bytes;
    struct hd_buf out;
};

static int wds_match(const char *name, const char *key)
{
    const char *base = strrchr(name, '/'), *dot;
    size_t n;

    if (*name == '/')
        name++;
    dot = strrchr(base ? base + 1 : name, '.');
    n = dot ? (size_t)(dot - name) : strlen(name);
    return strlen(key) == n && strncmp(name, key, n) == 0;
}

static int sel_match(const struct select *s, const char *name)
{
    size_t n = strlen(name), l = strlen(s->rx);

    switch (s->mode) {
    case SEL_PREFIX:
        return strncmp(name, s->rx, l) == 0;
    case SEL_SUFFIX:
        return n >= l && strcmp(name + n - l, s->rx) == 0;
    case SEL_SUBSTR:
        return strstr(name, s->rx) != NULL;
    case SEL_WDSKEY:
        return wds_match(name, s->rx);
    default:
        return regexec(&s->re, name, 0, NULL, 0) == 0;
    }
}

static int select_one(void *arg, const char *name, uint64_t off, uint64_t size)
{
    struct select *s = arg;

    if (!sel_match(s, name))
        return 0;
    s->bytes += size + 1024; /* with its header and padding, roughly */
    if (s->bytes > SELECT_MAX)
        return HD_ETOOLARGE;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct hd_tar_ent *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n].name = strdup(name)))
        return -ENOMEM;
    s->v[s->n].off = off;
    s->v[s->n].size = size;
    s->n++;
    return 0;
}

static void sel_resolve(void *ctx, size_t i, struct hd_tar_src *src)
{
    struct select *s = ctx;

    if ((src->fd = dup(s->fd)) < 0) {
        src->err = -errno;
        snprintf(src->msg, sizeof(src->msg), "dup: %s", strerror(errno));
        return;
    }
    src->off = s->v[i].off;
    src->len = s->v[i].size;
}

static const char *sel_name(void *ctx, size_t i)
{
    return ((struct select *)ctx)->v[i].name;
}

static int sel_sink(void *ctx, const void *buf, size_t n)
{
    struct select *s = ctx;

    hd_buf_append(&s->out, buf, n);
    return s->out.oom ? -ENOMEM : 0;
}

/* 0 with s->mode set, or answered 400. */
static int sel_mode(struct hd_req *r, struct select *s, const char *mode)
{
    static const char *const names[] = {"regexp", "prefix", "suffix", "substr", "wdskey"};
    size_t i;
    int rc;

    for (i = 0; mode && i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(mode, names[i]) == 0)
            break;
    if (!mode || i == sizeof(names) / sizeof(names[0])) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "archregx needs archmode: regexp, prefix, suffix, substr or wdskey.");
        return -1;
    }
    s->mode = (enum selmode)i;
    if (s->mode != SEL_REGEXP)
        return 0;
    /* no back-references: glibc's matcher may take exponential time on them */
    for (i = 0; s->rx[i]; i++)
        if (s->rx[i] == '\\' && s->rx[i + 1] >= '0' && s->rx[i + 1] <= '9')
            break;
    if (strlen(s->rx) > REGEX_MAX || s->rx[i] ||
        (rc = regcomp(&s->re, s->rx, REG_EXTENDED | REG_NOSUB)) != 0) {
        hd_resp_err_msg(r, HD_EBADARG,
                        "archregx is not a usable regular expression (POSIX extended syntax, at "
                        "most 512 bytes, no back-references).");
        return -1;
    }
    return 1; /* compiled: free it */
}

static void select_members(struct hd_req *r, struct hd_store *st, const char *bucket,
                           const char *key, const struct hd_obj_meta *m, int fd, int head)
{
    struct select s;
    struct hd_tarstream_cfg cfg = {0};
    struct hd_tarstream_ops ops = {0};
    char msg[400] = "";
    size_t i;
    int rc, compiled;

    memset(&s, 0, sizeof(s));
    s.rx = hd_req_param(r, "archregx");
    s.fd = fd;
    hd_buf_init(&s.out);
    if ((compiled = sel_mode(r, &s, hd_req_param(r, "archmode"))) < 0)
        return;
    rc = hd_store_tar_list(st, m, select_one, &s);
    if (rc == HD_ETOOLARGE) {
        hd_resp_err_msg(r, rc,
                        "The matching members are over 64 MiB together: read them by "
                        "archpath, or with a batch GET.");
        goto out;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        goto out;
    }
    if (s.n == 0) {
        snprintf(msg, sizeof(msg), "Archive %s/%s has no member matching '%.200s' (%s).", bucket,
                 key, s.rx, hd_req_param(r, "archmode"));
        hd_resp_err_msg(r, HD_ENOSUCHMEMBER, msg);
        goto out;
    }
    cfg.n = s.n;
    cfg.window = 1;
    cfg.entry_buf = 1u << 20;
    ops.resolve = sel_resolve;
    ops.name = sel_name;
    ops.sink = sel_sink;
    if ((rc = hd_tarstream_run(&cfg, &ops, &s, msg, sizeof(msg))) < 0) {
        HD_LOG(HD_WARN, r->id, "archregx %s/%s: %s", bucket, key, msg);
        hd_resp_err(r, rc);
        goto out;
    }
    if (head) {
        hd_resp_header(r, "Content-Type", "application/x-tar");
        hd_resp_head(r, 200, s.out.len);
    } else {
        hd_resp_buf(r, 200, "application/x-tar", s.out.data, s.out.len);
        s.out.data = NULL; /* the response's */
        hd_stats_add(HD_ST_GET_BYTES, s.out.len);
    }
out:
    if (compiled > 0)
        regfree(&s.re);
    for (i = 0; i < s.n; i++)
        free(s.v[i].name);
    free(s.v);
    hd_buf_cleanup(&s.out);
}

/* ---- archives without a member table: compressed tars and zips ----
 * Read in order with libarchive (common/tarindex.h, hd_archive_read_fd) on every request:
 * there are no byte ranges to keep, so one member, the list, or a selection costs reading
 * (decompressing) the archive up to the last member needed, on the target's pool. What is
 * sent is built in memory, at most XREAD_MAX. */

#define XREAD_MAX ((uint64_t)64 << 20)
#define XLIST_MAX 100000

/* 1 when the content starts like a compressed stream or a zip (tar underneath or not:
 * libarchive decides), which hoard's member table (plain tar only) cannot index. */
static int packed(int fd)
{
    static const struct {
        const char *magic;
        size_t len;
    } kinds[] = {
        {"\x1f\x8b\x08", 3},             /* gzip (deflate) */
        {"\xfd\x37\x7a\x58\x5a\x00", 6}, /* xz */
        {"\x28\xb5\x2f\xfd", 4},         /* zstd */
        {"\x04\x22\x4d\x18", 4},         /* lz4 frame */
        {"PK\x03\x04", 4},               /* zip */
        {"PK\x05\x06", 4},               /* zip without members */
    };
    unsigned char head[10];
    ssize_t n = pread(fd, head, sizeof(head), 0);
    size_t i;

    for (i = 0; n > 0 && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if ((size_t)n >= kinds[i].len && memcmp(head, kinds[i].magic, kinds[i].len) == 0)
            return 1;
    /* bzip2: "BZh", the block size digit, then a block's or the end's magic */
    return n == 10 && memcmp(head, "BZh", 3) == 0 && head[3] >= '1' && head[3] <= '9' &&
           (memcmp(head + 4, "\x31\x41\x59\x26\x53\x59", 6) == 0 ||
            memcmp(head + 4, "\x17\x72\x45\x38\x50\x90", 6) == 0);
}

enum xkind { X_MEMBER, X_LIST, X_SELECT };

struct xread {
    enum xkind kind;
    int fd, head, compiled;
    uint64_t size;
    int64_t mtime_ms;
    char *bucket, *key, *member;
    struct select sel; /* X_SELECT: the matcher (sel.rx points into rx) */
    char *rx;
    /* results */
    int found;
    uint64_t msize, count, bytes;
    struct hd_buf out; /* the member's bytes, or the selection's tar */
    json_t *list;
    struct archive *w; /* X_SELECT: the tar being written into out */
};

static void xread_free(void *arg)
{
    struct xread *x = arg;

    if (!x)
        return;
    if (x->fd >= 0)
        close(x->fd);
    if (x->compiled > 0)
        regfree(&x->sel.re);
    if (x->w)
        archive_write_free(x->w);
    json_decref(x->list);
    hd_buf_cleanup(&x->out);
    free(x->bucket);
    free(x->key);
    free(x->member);
    free(x->rx);
    free(x);
}

static int x_want(void *arg, const struct hd_arch_entry *e)
{
    struct xread *x = arg;
    json_t *j;
    int rc;

    switch (x->kind) {
    case X_MEMBER:
        if (strcmp(e->name, x->member) != 0)
            return HD_ARCH_SKIP;
        x->found = 1;
        x->msize = e->size;
        if (e->size > XREAD_MAX) /* a HEAD says what the GET would */
            return HD_ETOOLARGE;
        return x->head ? HD_ARCH_STOP : HD_ARCH_READ_STOP;
    case X_LIST:
        if (++x->count > XLIST_MAX)
            return HD_ETOOLARGE;
        j = json_pack("{s:s, s:I}", "name", e->name, "size", (json_int_t)e->size);
        if (!j || json_array_append_new(x->list, j) < 0)
            return -ENOMEM;
        return HD_ARCH_SKIP;
    default:
        if (!sel_match(&x->sel, e->name))
            return HD_ARCH_SKIP;
        x->bytes += e->size + 1024; /* with its header and padding, roughly */
        if (x->bytes > XREAD_MAX)
            return HD_ETOOLARGE;
        x->count++;
        if ((rc = hd_tar_write_header(x->w, e->name, e->size, e->mtime, NULL, 0)) < 0)
            return rc;
        return HD_ARCH_READ;
    }
}

static int x_data(void *arg, const void *buf, size_t n)
{
    struct xread *x = arg;

    if (x->kind == X_SELECT)
        return archive_write_data(x->w, buf, n) == (la_ssize_t)n ? 0 : HD_EINTERNAL;
    hd_buf_append(&x->out, buf, n);
    return x->out.oom ? -ENOMEM : 0;
}

static long x_tar_out(void *arg, const void *buf, size_t n)
{
    struct xread *x = arg;

    hd_buf_append(&x->out, buf, n);
    return x->out.oom ? -1 : (long)n;
}

/* The reading, on a pool thread (or inline): 0 or an error with msg. */
static int xread_work(struct xread *x, char *msg, size_t msglen)
{
    void *loc = NULL;
    int rc;

    if (x->kind == X_SELECT) {
        loc = hd_tar_locale_enter();
        x->w = hd_tar_writer_new(x_tar_out, x);
    }
    if (x->kind == X_SELECT && !x->w)
        rc = -ENOMEM;
    else
        rc = hd_archive_read_fd(x->fd, x->size, x_want, x_data, x, msg, msglen);
    if (rc == 0 && x->w && archive_write_close(x->w) != ARCHIVE_OK)
        rc = x->out.oom ? -ENOMEM : HD_EINTERNAL;
    if (rc == 0 && x->kind == X_MEMBER && x->found && !x->head && x->out.len != x->msize) {
        rc = HD_ENOTARCHIVE; /* the answer's length is the header's: never serve fewer bytes */
        snprintf(msg, msglen,
                 "corrupt archive: member '%.200s' has %zu bytes, its header says %llu", x->member,
                 x->out.len, (unsigned long long)x->msize);
    }
    if (x->kind == X_SELECT)
        hd_tar_locale_leave(loc);
    return rc;
}

static void xread_run(struct hd_acall *a)
{
    a->rc = xread_work(a->arg, a->msg, sizeof(a->msg));
}

static void xread_answer(struct hd_req *r, struct xread *x, int rc, const char *why)
{
    uint64_t off, len;
    char msg[900], date[32], *data;
    size_t n;
    int status;

    if (rc == HD_ENOTARCHIVE) {
        snprintf(msg, sizeof(msg), "%s/%s is not usable as an archive: %s", x->bucket, x->key, why);
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    if (rc == HD_ETOOLARGE) {
        snprintf(msg, sizeof(msg), "%s",
                 x->kind == X_LIST ? "The archive has over 100000 members: list it as a tar."
                 : x->kind == X_MEMBER
                     ? "The member is over 64 MiB: members of compressed archives and zips are "
                       "read into memory; store the archive as a plain tar to read it by range."
                     : "The matching members are over 64 MiB together: read them by "
                       "archpath, or with a batch GET.");
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (x->kind == X_LIST) {
        json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:O}", "bucket", x->bucket, "name", x->key,
                              "size", (json_int_t)x->size, "count",
                              (json_int_t)json_array_size(x->list), "members", x->list);
        if (!(data = j ? hd_json_dump_steal(j, &n) : NULL))
            hd_resp_err(r, -ENOMEM);
        else
            hd_resp_buf(r, 200, "application/json", data, n);
        return;
    }
    if (x->kind == X_SELECT && x->count == 0) {
        snprintf(msg, sizeof(msg), "Archive %s/%s has no member matching '%.200s' (%s).", x->bucket,
                 x->key, x->rx, hd_req_param(r, "archmode"));
        hd_resp_err_msg(r, HD_ENOSUCHMEMBER, msg);
        return;
    }
    if (x->kind == X_SELECT) {
        if (x->head) {
            hd_resp_header(r, "Content-Type", "application/x-tar");
            hd_resp_head(r, 200, x->out.len);
            return;
        }
        hd_stats_add(HD_ST_GET_BYTES, x->out.len);
        data = hd_buf_steal(&x->out, &n);
        hd_resp_buf(r, 200, "application/x-tar", data, n);
        return;
    }
    if (!x->found) {
        snprintf(msg, sizeof(msg), "Archive %s/%s has no member '%.300s'.", x->bucket, x->key,
                 x->member);
        hd_resp_err_msg(r, HD_ENOSUCHMEMBER, msg);
        return;
    }
    if ((status = hd_resp_range(r, x->msize, &off, &len)) < 0)
        return;
    hd_http_date_format((time_t)(x->mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_header(r, "Accept-Ranges", "bytes");
    if (x->head) { /* a GET's comes with its body (hd_resp_buf) */
        hd_resp_header(r, "Content-Type", hd_tar_ctype(x->member));
        hd_resp_head(r, status, len);
        return;
    }
    if (off)
        memmove(x->out.data, x->out.data + off, (size_t)len);
    x->out.len = (size_t)len;
    hd_stats_add(HD_ST_GET_BYTES, len);
    data = hd_buf_steal(&x->out, &n);
    hd_resp_buf(r, status, hd_tar_ctype(x->member), data, n);
}

static void xread_done(struct hd_req *r, struct hd_acall *a)
{
    xread_answer(r, a->arg, a->rc, a->msg);
}

/* Serves r from a compressed tar or a zip (fd taken). */
static void packed_serve(struct hd_req *r, struct hd_pool *pool, const char *bucket,
                         const char *key, const struct hd_obj_meta *m, int fd, int head)
{
    struct xread *x = calloc(1, sizeof(*x));
    const char *rx = hd_req_param(r, "archregx"), *member = hd_req_param(r, "archpath");
    char msg[512] = "";
    int rc;

    if (!x) {
        close(fd);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    x->fd = fd;
    x->head = head;
    x->size = m->size;
    x->mtime_ms = m->mtime_ms;
    hd_buf_init(&x->out);
    x->kind = rx && *rx ? X_SELECT : member ? X_MEMBER : X_LIST;
    x->bucket = strdup(bucket);
    x->key = strdup(key);
    x->member = member ? strdup(member) : NULL;
    x->rx = rx ? strdup(rx) : NULL;
    x->list = x->kind == X_LIST ? json_array() : NULL;
    if (!x->bucket || !x->key || (member && !x->member) || (rx && !x->rx) ||
        (x->kind == X_LIST && !x->list)) {
        xread_free(x);
        hd_resp_err(r, -ENOMEM);
        return;
    }
    if (x->kind == X_SELECT) {
        x->sel.rx = x->rx;
        if ((x->compiled = sel_mode(r, &x->sel, hd_req_param(r, "archmode"))) < 0) {
            xread_free(x);
            return;
        }
    }
    if (pool) {
        hd_acall_request(r, pool, xread_run, xread_done, x, xread_free);
        return;
    }
    rc = xread_work(x, msg, sizeof(msg));
    xread_answer(r, x, rc, msg);
    xread_free(x);
}

int hd_arch_packed_member(int fd, uint64_t size, const char *member, int *mfd, uint64_t *len,
                          char *msg, size_t msglen)
{
    struct xread x;
    int rc, out;

    if (!packed(fd))
        return 0;
    memset(&x, 0, sizeof(x));
    x.kind = X_MEMBER;
    x.fd = fd;
    x.size = size;
    x.member = (char *)member;
    hd_buf_init(&x.out);
    rc = xread_work(&x, msg, msglen);
    if (rc == 0 && !x.found)
        rc = HD_ENOSUCHMEMBER;
    if (rc == HD_ETOOLARGE)
        snprintf(msg, msglen,
                 "member '%.200s' is over 64 MiB (members of compressed archives "
                 "are read into memory)",
                 member);
    if (rc == 0 && (out = memfd_create("hoard-member", MFD_CLOEXEC)) < 0)
        rc = -errno;
    if (rc == 0) {
        size_t done = 0;
        while (rc == 0 && done < x.out.len) {
            ssize_t n = write(out, x.out.data + done, x.out.len - done);
            if (n < 0 && errno != EINTR)
                rc = -errno;
            else if (n > 0)
                done += (size_t)n;
        }
        if (rc < 0)
            close(out);
        else {
            *mfd = out;
            *len = x.out.len;
        }
    }
    hd_buf_cleanup(&x.out);
    return rc < 0 ? rc : 1;
}

void hd_arch_serve(struct hd_req *r, struct hd_store *st, struct hd_pool *pool, const char *bucket,
                   const char *key, const struct hd_obj_meta *m, int *fd, int head)
{
    const char *rx = hd_req_param(r, "archregx");

    const char *member = hd_req_param(r, "archpath");
    uint64_t moff = 0, msize = 0, off, len, n = 0;
    char msg[512], date[32];
    int status = 200, rc;

    if (*fd < 0 && (*fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0) {
        hd_resp_err(r, errno == ENOENT ? HD_ENOSUCHKEY : -errno);
        return;
    }
    if (member && !*member && !(rx && *rx)) {
        hd_resp_err_msg(r, HD_EBADARG, "archpath must name a member of the archive.");
        return;
    }
    if (member && *member && rx && *rx) {
        hd_resp_err_msg(r, HD_EBADARG, "Give archpath or archregx, not both.");
        return;
    }
    /* a plain tar's member table first (one catalog lookup once indexed); an object that is
     * none keeps that verdict, and may be a compressed tar or a zip */
    rc = hd_arch_index(st, bucket, key, m, *fd, &n, msg, sizeof(msg));
    if (rc == HD_ENOTARCHIVE && packed(*fd)) {
        packed_serve(r, pool, bucket, key, m, *fd, head);
        *fd = -1;
        return;
    }
    if (rc == HD_ENOTARCHIVE) {
        char full[700];
        snprintf(full, sizeof(full), "%s/%s is not usable as an archive: %s", bucket, key, msg);
        hd_resp_err_msg(r, rc, full);
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (rx && *rx) {
        select_members(r, st, bucket, key, m, *fd, head);
        return;
    }
    if (!member) {
        list_members(r, st, bucket, key, m);
        return;
    }
    rc = hd_store_tar_member(st, m, member, &moff, &msize);
    if (rc == HD_ENOSUCHMEMBER) {
        snprintf(msg, sizeof(msg), "Archive %s/%s (%llu members) has no member '%.300s'.", bucket,
                 key, (unsigned long long)n, member);
        hd_resp_err_msg(r, rc, msg);
        return;
    }
    if (rc < 0) {
        hd_resp_err(r, rc);
        return;
    }
    status = hd_resp_range(r, msize, &off, &len);
    if (status < 0)
        return;
    hd_http_date_format((time_t)(m->mtime_ms / 1000), date);
    hd_resp_header(r, "Last-Modified", date);
    hd_resp_header(r, "Accept-Ranges", "bytes");
    hd_resp_header(r, "Content-Type", hd_tar_ctype(member));
    if (head) {
        hd_resp_head(r, status, len);
    } else if (hd_resp_fd(r, status, *fd, moff + off, len) == 0) {
        *fd = -1; /* the response owns it */
        hd_stats_add(HD_ST_GET_BYTES, len);
    } else {
        hd_resp_err(r, HD_EINTERNAL);
    }
}
