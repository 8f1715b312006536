/* daemon: what a target reports about itself to administrators. GET /v1/daemon answers its
 * id, per mountpath the file system's capacity (statvfs) and the objects the mountpath's
 * catalog holds, and its request counters; a proxy gathers these for GET
 * /v1/cluster/capacity and AIStore's node_status (proxy/api/capacity.c).
 * Runs on HTTP worker threads. */
#include "target/api/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "common/errors.h"
#include "common/json.h"
#include "common/metrics.h"
#include "target/cluster/cluster.h"

/* One mountpath: {"path","fsid","total","used","free","available","objects"} (bytes), with
 * "error" instead of the numbers it could not get. */
static json_t *mountpath_json(struct hd_store *st, size_t i)
{
    const char *path = hd_store_mp_path(st, i); /* NULL only for i >= hd_store_nmp() */
    json_t *o;
    struct statvfs v;
    uint64_t objs;
    int rc;

    if (!path || !(o = json_pack("{s:s}", "path", path)))
        return NULL;
    if (statvfs(path, &v) == 0) {
        uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
        uint64_t total = (uint64_t)v.f_blocks * unit, free_b = (uint64_t)v.f_bfree * unit;
        uint64_t avail = (uint64_t)v.f_bavail * unit;
        char fsid[24];
        snprintf(fsid, sizeof(fsid), "%lx", (unsigned long)v.f_fsid);
        json_object_set_new(o, "fsid", json_string(fsid));
        json_object_set_new(o, "total", json_integer((json_int_t)total));
        json_object_set_new(o, "used", json_integer((json_int_t)(total - free_b)));
        json_object_set_new(o, "free", json_integer((json_int_t)free_b));
        json_object_set_new(o, "available", json_integer((json_int_t)avail));
    } else {
        json_object_set_new(o, "error", json_string(strerror(errno)));
    }
    rc = hd_store_mp_count(st, i, &objs);
    if (rc == 0)
        json_object_set_new(o, "objects", json_integer((json_int_t)objs));
    else if (!json_object_get(o, "error"))
        json_object_set_new(o, "error", json_string(hd_strerror(rc)));
    return o;
}

/* This process's request counters: {"get": {"n","errors","latency_us"}, "put", "head",
 * "delete", "list"}, plus "get_bytes", "put_bytes" and "started" (unix seconds). */
static json_t *requests_json(void)
{
    static const struct {
        const char *name;
        int op;
    } ops[] = {{"get", HD_OP_GET},
               {"put", HD_OP_PUT},
               {"head", HD_OP_HEAD},
               {"delete", HD_OP_DELETE},
               {"list", HD_OP_LIST}};
    json_t *o = json_object();
    uint64_t n, errs, us;
    size_t i;

    for (i = 0; o && i < sizeof(ops) / sizeof(ops[0]); i++) {
        hd_metrics_op_totals(ops[i].op, &n, &errs, &us);
        json_object_set_new(o, ops[i].name,
                            json_pack("{s:I, s:I, s:I}", "n", (json_int_t)n, "errors",
                                      (json_int_t)errs, "latency_us", (json_int_t)us));
    }
    if (o) {
        json_object_set_new(o, "get_bytes",
                            json_integer((json_int_t)hd_stats_get(HD_ST_GET_BYTES)));
        json_object_set_new(o, "put_bytes",
                            json_integer((json_int_t)hd_stats_get(HD_ST_PUT_BYTES)));
        json_object_set_new(o, "started", json_integer((json_int_t)hd_metrics_start_time()));
    }
    return o;
}

void hd_daemon_handle(struct hd_req *r, struct hd_target *t)
{
    json_t *out, *mps;
    size_t i, len;
    char *s;
    int rc;

    r->api = HD_API_NATIVE;
    r->op = HD_OP_ADMIN;
    if ((rc = hd_target_auth_admin(r, t)) < 0) {
        hd_resp_err(r, rc);
        return;
    }
    if (strcmp(r->method, "GET") != 0) {
        hd_resp_err(r, HD_EMETHOD);
        return;
    }
    mps = json_array();
    out = json_pack("{s:s, s:s, s:o, s:o*}", "id", hd_tcluster_id(t->cl), "role", "target",
                    "mountpaths", mps, "requests", requests_json());
    for (i = 0; out && i < hd_store_nmp(t->st); i++)
        if (json_array_append_new(mps, mountpath_json(t->st, i)) < 0) {
            json_decref(out);
            out = NULL;
        }
    s = out ? hd_json_dump_steal(out, &len) : NULL;
    if (!s) {
        hd_resp_err(r, -ENOMEM);
        return;
    }
    hd_resp_buf(r, 200, "application/json", s, len);
}
