#include "target/object/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/json.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/tarindex.h"
#include "target/object/object.h"
#include "target/store/tar.h"

int hd_arch_wanted(const struct hd_req *r)
{
    return hd_query_find(&r->query, "archpath") || hd_query_find(&r->query, "members");
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

void hd_arch_serve(struct hd_req *r, struct hd_store *st, const char *bucket, const char *key,
                   const struct hd_obj_meta *m, int *fd, int head)
{
    const char *member = hd_req_param(r, "archpath");
    uint64_t moff = 0, msize = 0, off, len, n = 0;
    char msg[512], date[32];
    int status = 200, rc;

    if (*fd < 0 && (*fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0) {
        hd_resp_err(r, errno == ENOENT ? HD_ENOSUCHKEY : -errno);
        return;
    }
    if (member && !*member) {
        hd_resp_err_msg(r, HD_EBADARG, "archpath must name a member of the archive.");
        return;
    }
    rc = hd_arch_index(st, bucket, key, m, *fd, &n, msg, sizeof(msg));
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
