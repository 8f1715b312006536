/* cmd_cluster: `hoard cluster show|maintenance|decommission|rebalance`: the cluster map
 * (GET /v1/cluster) with each target's mountpath capacity (GET /v1/cluster/capacity), target
 * flags (POST /v1/cluster/{maintenance,decommission}/NODE) and POST /v1/cluster/rebalance. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"

/* A node of the smap: its entry, and where it was listed. */
struct nref {
    const char *id;
    json_t *e;
    int target, down;
};

static int nref_cmp(const void *a, const void *b)
{
    const struct nref *x = a, *y = b;

    if (x->target != y->target)
        return x->target - y->target;
    return strcmp(x->id, y->id);
}

/* The smap's nodes, proxies first, each group by id. *out is malloc'd. */
static int nodes_sorted(json_t *smap, struct nref **out, size_t *n)
{
    static const char *const maps[] = {"pmap", "tmap", "tmap_down"};
    size_t cap = 0, i, k = 0;
    const char *id;
    json_t *e;

    for (i = 0; i < 3; i++)
        cap += json_object_size(json_object_get(smap, maps[i]));
    *out = calloc(cap ? cap : 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (i = 0; i < 3; i++)
        json_object_foreach(json_object_get(smap, maps[i]), id, e)
        {
            if (k == cap)
                break;
            (*out)[k++] = (struct nref){id, e, i > 0, i == 2};
        }
    qsort(*out, k, sizeof(**out), nref_cmp);
    *n = k;
    return 0;
}

/* A target's mountpaths from the capacity document, each with "percent_used" added. */
static void add_capacity(json_t *node, json_t *cap_entry)
{
    const char *err = json_string_value(json_object_get(cap_entry, "error"));
    json_t *mps = json_object_get(cap_entry, "mountpaths"), *out, *m;
    size_t i;

    if (!cap_entry) {
        json_object_set_new(node, "capacity_error", json_string("not reported"));
        return;
    }
    if (err || !json_is_array(mps)) {
        json_object_set_new(node, "capacity_error", json_string(err ? err : "not reported"));
        return;
    }
    out = json_deep_copy(mps);
    json_array_foreach(out, i, m)
    {
        json_t *used = json_object_get(m, "used"), *avail = json_object_get(m, "available");
        if (json_is_integer(used) && json_is_integer(avail))
            json_object_set_new(m, "percent_used",
                                json_integer(hd_cli_pct_used((uint64_t)json_integer_value(used),
                                                             (uint64_t)json_integer_value(avail))));
    }
    json_object_set_new(node, "mountpaths", out ? out : json_array());
}

/* The `cluster show --json` document: the smap normalised into one sorted node list, with
 * each target's capacity (cap NULL: could not be fetched). */
static json_t *cluster_view(json_t *smap, json_t *cap)
{
    const char *primary = json_string_value(json_object_get(smap, "primary"));
    json_t *ages = json_object_get(smap, "heartbeat_age_ms"), *view, *nodes;
    const char *rb = json_string_value(json_object_get(smap, "rebalance_id"));
    struct nref *ns = NULL;
    size_t n = 0, i;

    if (nodes_sorted(smap, &ns, &n) < 0)
        return NULL;
    nodes = json_array();
    view = json_pack("{s:O?, s:O?, s:s?, s:o, s:o}", "uuid", json_object_get(smap, "uuid"),
                     "smap_version", json_object_get(smap, "version"), "primary", primary,
                     "rebalance_id", rb ? json_string(rb) : json_null(), "nodes", nodes);
    for (i = 0; view && i < n; i++) {
        const char *url = json_string_value(
            json_object_get(json_object_get(ns[i].e, "public_net"), "direct_url"));
        json_int_t flags = json_integer_value(json_object_get(ns[i].e, "flags"));
        json_t *age = json_object_get(ages, ns[i].id);
        json_t *nd =
            json_pack("{s:s, s:s, s:b, s:s, s:s, s:I}", "id", ns[i].id, "role",
                      ns[i].target ? "target" : "proxy", "primary",
                      primary && strcmp(primary, ns[i].id) == 0, "url", url ? url : "", "state",
                      hd_cli_node_state((unsigned)flags, ns[i].down), "flags", flags);
        if (!nd)
            continue;
        if (json_is_integer(age))
            json_object_set(nd, "heartbeat_age_ms", age);
        if (ns[i].target && cap)
            add_capacity(nd, json_object_get(json_object_get(cap, "targets"), ns[i].id));
        json_array_append_new(nodes, nd);
    }
    free(ns);
    return view;
}

static const char *str_or(json_t *j, const char *dflt)
{
    const char *s = json_string_value(j);

    return s && *s ? s : dflt;
}

static void print_nodes(json_t *view)
{
    static const char *const headers[] = {"NODE", "ROLE", "URL", "STATE", "HEARTBEAT"};
    struct hd_cli_table t;
    json_t *nd;
    size_t i;

    hd_cli_table_init(&t, 5, headers, 0);
    json_array_foreach(json_object_get(view, "nodes"), i, nd)
    {
        json_t *age = json_object_get(nd, "heartbeat_age_ms");
        char d[32], hb[48] = "-";
        const char *row[5];
        if (json_is_integer(age)) {
            hd_cli_fmt_duration((uint64_t)json_integer_value(age), d, sizeof(d));
            snprintf(hb, sizeof(hb), "%s ago", d);
        }
        row[0] = str_or(json_object_get(nd, "id"), "?");
        row[1] = json_is_true(json_object_get(nd, "primary"))
                     ? "proxy (primary)"
                     : str_or(json_object_get(nd, "role"), "?");
        row[2] = str_or(json_object_get(nd, "url"), "-");
        row[3] = str_or(json_object_get(nd, "state"), "?");
        row[4] = hb;
        hd_cli_table_add(&t, row);
    }
    hd_cli_table_print(&t, stdout);
    hd_cli_table_cleanup(&t);
}

static void size_cell(json_t *v, char *out, size_t len)
{
    if (json_is_integer(v))
        hd_cli_fmt_size((uint64_t)json_integer_value(v), out, len);
    else
        snprintf(out, len, "-");
}

static void print_capacity(json_t *view)
{
    static const char *const headers[] = {"TARGET", "MOUNTPATH", "TOTAL",  "USED",
                                          "FREE",   "USE%",      "OBJECTS"};
    struct hd_cli_table t;
    json_t *nd, *m;
    size_t i, k;

    hd_cli_table_init(&t, 7, headers, 0x7cu); /* numbers right-aligned */
    json_array_foreach(json_object_get(view, "nodes"), i, nd)
    {
        const char *id = str_or(json_object_get(nd, "id"), "?");
        const char *err = json_string_value(json_object_get(nd, "capacity_error"));
        char total[32], used[32], avail[32], pct[8], objs[24], msg[300];
        const char *row[7] = {id, NULL, total, used, avail, pct, objs};
        if (strcmp(str_or(json_object_get(nd, "role"), ""), "target") != 0)
            continue;
        if (err) {
            snprintf(msg, sizeof(msg), "(%s)", err);
            row[1] = msg;
            row[2] = row[3] = row[4] = row[5] = row[6] = "-";
            hd_cli_table_add(&t, row);
            continue;
        }
        json_array_foreach(json_object_get(nd, "mountpaths"), k, m)
        {
            json_t *p = json_object_get(m, "percent_used"), *o = json_object_get(m, "objects");
            size_cell(json_object_get(m, "total"), total, sizeof(total));
            size_cell(json_object_get(m, "used"), used, sizeof(used));
            size_cell(json_object_get(m, "available"), avail, sizeof(avail));
            snprintf(pct, sizeof(pct), json_is_integer(p) ? "%lld%%" : "-",
                     (long long)json_integer_value(p));
            snprintf(objs, sizeof(objs), json_is_integer(o) ? "%lld" : "-",
                     (long long)json_integer_value(o));
            row[1] = str_or(json_object_get(m, "path"), "?");
            if (json_object_get(m, "error")) {
                snprintf(msg, sizeof(msg), "%s (%s)", row[1],
                         str_or(json_object_get(m, "error"), "?"));
                row[1] = msg;
            }
            hd_cli_table_add(&t, row);
        }
    }
    hd_cli_table_print(&t, stdout);
    hd_cli_table_cleanup(&t);
}

int hd_cli_cluster_show(struct hd_cli *cli, int argc, char **argv)
{
    json_t *smap = NULL, *cap = NULL, *view = NULL;
    int rc, caprc;

    rc = hd_cli_json_do(cli, "GET", "/v1/cluster", NULL, "cluster show", &smap);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    /* Nodes are worth showing even when capacity cannot be had: its error line comes first. */
    caprc =
        hd_cli_json_do(cli, "GET", "/v1/cluster/capacity", NULL, "cluster show: capacity", &cap);
    view = cluster_view(smap, cap);
    if (!view) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if (cli->json) {
        rc = hd_cli_print_json(view);
    } else {
        const char *rb = json_string_value(json_object_get(view, "rebalance_id"));
        printf("cluster %s, smap v%lld, primary %s\n", str_or(json_object_get(view, "uuid"), "?"),
               (long long)json_integer_value(json_object_get(view, "smap_version")),
               str_or(json_object_get(view, "primary"), "?"));
        if (rb)
            printf("rebalance %s in progress (hoard job wait %s)\n", rb, rb);
        else
            printf("rebalance: none in progress\n");
        putchar('\n');
        print_nodes(view);
        if (cap) {
            putchar('\n');
            print_capacity(view);
        }
        rc = HD_CLI_EXIT_OK;
    }
    if (rc == HD_CLI_EXIT_OK)
        rc = caprc;
out:
    json_decref(view);
    json_decref(cap);
    json_decref(smap);
    return rc;
}

/* ---- flags ---------------------------------------------------------------------------- */

static int in_smap(json_t *smap, const char *id)
{
    return json_object_get(json_object_get(smap, "tmap"), id) ||
           json_object_get(json_object_get(smap, "tmap_down"), id);
}

/* maintenance and decommission: POST {"on": bool}; the answer is the new smap. */
static int flag_cmd(struct hd_cli *cli, const char *node, const char *kind)
{
    int on = !cli->opt[HD_CLI_OPT_OFF], decomm = strcmp(kind, "decommission") == 0;
    struct hd_buf path, what;
    json_t *smap = NULL;
    const char *rb;
    long long ver;
    int rc;

    hd_buf_init(&path);
    hd_buf_init(&what);
    if (!*node) {
        rc = hd_cli_usage_error(cli, "empty NODE");
        goto out;
    }
    hd_buf_printf(&path, "/v1/cluster/%s/", kind);
    hd_cli_path_encode(&path, node, 0);
    hd_buf_printf(&what, "cluster %s %s", kind, node);
    if (path.oom || what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    rc = hd_cli_json_do(cli, "POST", path.data, on ? "{\"on\": true}" : "{\"on\": false}",
                        what.data, &smap);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    rb = json_string_value(json_object_get(smap, "rebalance_id"));
    ver = (long long)json_integer_value(json_object_get(smap, "version"));
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:b, s:I, s:s?, s:b}", "node", node, kind, on, "smap_version",
                              (json_int_t)ver, "rebalance_id", rb, "in_smap", in_smap(smap, node));
        rc = hd_cli_print_json(j);
        json_decref(j);
        goto out;
    }
    if (decomm && on && !in_smap(smap, node))
        printf("%s: decommissioned: it was down, so it is forgotten and the objects it held "
               "are gone from the cluster (smap v%lld)\n",
               node, ver);
    else if (decomm)
        printf("%s: %s (smap v%lld)\n", node,
               on ? "decommissioning: its objects move to the other targets, then it leaves "
                    "the cluster"
                  : "decommission cancelled",
               ver);
    else
        printf("%s: maintenance %s (smap v%lld)\n", node,
               on ? "on: no new objects are placed on it" : "off", ver);
    if (rb)
        printf("rebalance %s in progress; follow it with: hoard job wait %s\n", rb, rb);
    rc = HD_CLI_EXIT_OK;
out:
    json_decref(smap);
    hd_buf_cleanup(&what);
    hd_buf_cleanup(&path);
    return rc;
}

int hd_cli_cluster_maintenance(struct hd_cli *cli, int argc, char **argv)
{
    return flag_cmd(cli, argv[0], "maintenance");
}

int hd_cli_cluster_decommission(struct hd_cli *cli, int argc, char **argv)
{
    return flag_cmd(cli, argv[0], "decommission");
}

int hd_cli_cluster_rebalance(struct hd_cli *cli, int argc, char **argv)
{
    json_t *j = NULL;
    const char *id, *status;
    int rc;

    rc = hd_cli_json_do(cli, "POST", "/v1/cluster/rebalance", NULL, "cluster rebalance", &j);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    if (cli->json) {
        rc = hd_cli_print_json(j);
        goto out;
    }
    id = json_string_value(json_object_get(j, "id"));
    status = json_string_value(json_object_get(j, "status"));
    if (id && *id)
        printf("rebalance %s requested; follow it with: hoard job wait %s\n", id, id);
    else /* a proxy older than this CLI */
        printf("%s (the server did not say which job)\n", status ? status : "requested");
out:
    json_decref(j);
    return rc;
}

/* hoard auth token: the AuthN-style login (POST /v1/users/ACCESS_KEY {"password"}) with the
 * CLI's own credentials; prints the bearer token (docs/aistore-compat.md). */
int hd_cli_auth_token(struct hd_cli *cli, int argc, char **argv)
{
    const char *ttl = cli->opt[HD_CLI_OPT_TTL], *tok;
    json_t *j = NULL, *body;
    char path[256], *text;
    unsigned long long s = 0;
    int rc;

    if (!cli->cred.access_key || !cli->cred.secret_key)
        return hd_cli_usage_error(cli, "auth token needs --access-key and --secret-key "
                                       "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
    if (ttl && (sscanf(ttl, "%llu", &s) != 1 || s == 0 || s > 86400))
        return hd_cli_usage_error(cli, "--ttl takes seconds, 1..86400");
    if (strlen(cli->cred.access_key) > 128 || strpbrk(cli->cred.access_key, "/%?#"))
        return hd_cli_usage_error(cli, "the access key cannot be part of a URL path");
    snprintf(path, sizeof(path), "/v1/users/%s", cli->cred.access_key);
    body = json_pack("{s:s}", "password", cli->cred.secret_key);
    if (body && s)
        json_object_set_new(body, "expires_in", json_integer((json_int_t)s * 1000000000LL));
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    rc = hd_cli_json_do(cli, "POST", path, text, "auth token", &j);
    free(text);
    if (rc != HD_CLI_EXIT_OK)
        goto out;
    tok = json_string_value(json_object_get(j, "token"));
    if (cli->json)
        rc = hd_cli_print_json(j);
    else if (tok)
        printf("%s\n", tok);
    else
        rc = hd_cli_fail(HD_CLI_EXIT_API, "auth token: the answer has no token");
out:
    json_decref(j);
    return rc;
}
