/* prestop: `hoardd --prestop`, the Kubernetes preStop hook of a target that is about to stop
 * for a restart (docs/operations.md, "Upgrades and rolling restarts"). A process of its own,
 * with the target's configuration: it finds the primary through cluster.join, asks it to put
 * this target into maintenance for a restart (signed as the target itself,
 * {"on": true, "restart": true}: no object is placed on it any more and a rebalance moves its
 * objects to their next owners, while reads that miss there are served from it by
 * get-from-neighbour), and waits, bounded, until that rebalance has finished. The pod then
 * stops with nothing of its own left to serve; when it joins again the primary ends the
 * maintenance and the objects come back (proxy/cluster/membership.c). */
#include "target/cluster/cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/errors.h"
#include "common/http.h"
#include "common/httpc.h"
#include "common/nodeauth.h"
#include "common/smap.h"

#define PRESTOP_CALL_MS 5000L
#define PRESTOP_POLL_MS 500L
#define PRESTOP_REFUSED (-2) /* a call refused with an unsigned answer */

static long long now_ms(void)
{
    return (long long)(hd_now_ns() / 1000000u);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* One signed JSON call, repeated while the node cannot be reached or answers 5xx, until the
 * deadline. 0 with *status and *out (the last answer), or -1 with why in err (-2: refused
 * with an unsigned answer: an unknown node or another cluster.secret). */
static int call(struct hd_nodeauth *na, const char *to, const char *method, const char *url,
                const json_t *in, long long deadline, long *status, json_t **out, char *err,
                size_t errlen)
{
    char why[256] = "";

    for (;;) {
        long long left = deadline - now_ms();
        long ms = left < PRESTOP_CALL_MS ? (long)left : PRESTOP_CALL_MS;
        int rc;

        *out = NULL;
        *status = 0;
        if (ms < 200)
            ms = 200;
        rc = hd_httpc_json(na, to, method, url, in, ms, status, out);
        if (rc == 0 && *status < 500)
            return 0;
        if (rc == -EACCES) { /* a refusal, which does not heal by waiting */
            fail(err, errlen,
                 "%s %s: refused (HTTP %ld, an unsigned answer): the cluster does not know node "
                 "%s, or its cluster.secret differs from this one",
                 method, url, *status, hd_nodeauth_self(na));
            return PRESTOP_REFUSED;
        }
        if (rc == 0) {
            const char *m = json_string_value(json_object_get(*out, "message"));
            snprintf(why, sizeof(why), "HTTP %ld%s%s", *status, m ? ": " : "", m ? m : "");
        } else {
            snprintf(why, sizeof(why), "%s", strerror(-rc));
        }
        json_decref(*out);
        *out = NULL;
        if (now_ms() + 1000 > deadline)
            return fail(err, errlen, "%s %s: %s (still so when --prestop-timeout ran out)", method,
                        url, why);
        nap_ms(1000);
    }
}

/* The node id as the running target has it: node.id, else the one kept in DATA/node.db. */
static int node_id(const struct hd_config *cfg, char id[HD_NODE_ID_MAX], char *err, size_t errlen)
{
    struct hd_smap_state *st = NULL;
    char *saved = NULL;
    int rc;

    if (*hd_config_str(cfg, "node.id")) {
        snprintf(id, HD_NODE_ID_MAX, "%s", hd_config_str(cfg, "node.id"));
        return 0;
    }
    if ((rc = hd_smap_state_open(hd_config_str(cfg, "data"), &st)) < 0)
        return fail(err, errlen, "node.id is empty and %s/node.db cannot be opened: %s",
                    hd_config_str(cfg, "data"), hd_strerror(rc));
    rc = hd_smap_state_meta_get(st, "node_id", &saved);
    hd_smap_state_close(st);
    if (rc < 0 || !saved || !*saved || strlen(saved) >= HD_NODE_ID_MAX) {
        free(saved);
        return fail(err, errlen,
                    "node.id is empty and %s/node.db holds no node id (has this "
                    "target ever started?)",
                    hd_config_str(cfg, "data"));
    }
    snprintf(id, HD_NODE_ID_MAX, "%s", saved);
    free(saved);
    return 0;
}

/* Whether the primary behind join answers a heartbeat from id with "unknown node" (404,
 * signed): id is no member (decommissioned, or never joined), but the secret is right. */
static int not_member(struct hd_nodeauth *na, const char *join, const char *id, long long deadline)
{
    char url[HD_NODE_URL_MAX + 32], err[256];
    json_t *in = json_pack("{s:s}", "daemon_id", id), *j = NULL;
    long status = 0;
    int rc;

    snprintf(url, sizeof(url), "%s/v1/cluster/heartbeat", join);
    rc = in ? call(na, "", "POST", url, in, deadline, &status, &j, err, sizeof(err)) : -1;
    json_decref(in);
    json_decref(j);
    return rc == 0 && status == 404;
}

/* The smap some proxy behind base holds (any proxy will do). 0, -1 or -2 as call(). */
static int fetch_smap(struct hd_nodeauth *na, const char *base, long long deadline,
                      struct hd_smap **s, char *err, size_t errlen)
{
    char url[HD_NODE_URL_MAX + 32];
    json_t *j = NULL;
    long status;

    snprintf(url, sizeof(url), "%s/v1/cluster/smap", base);
    int rc = call(na, "", "GET", url, NULL, deadline, &status, &j, err, errlen);

    if (rc < 0)
        return rc;
    if (status != 200 || hd_smap_from_json(j, s) < 0) {
        const char *m = json_string_value(json_object_get(j, "message"));
        json_decref(j);
        return fail(err, errlen, "GET %s: HTTP %ld%s%s", url, status, m ? ": " : "",
                    m ? m : " (not a cluster map)");
    }
    json_decref(j);
    return 0;
}

/* The wait failed with the objects perhaps not all moved: maintenance that we set (ours) is
 * taken back, so that while the target is away its objects answer 503 (down, retry) from the
 * proxies instead of 404 from a new owner that has no copy. Appends the outcome to err. */
static void take_back(struct hd_nodeauth *na, const char *url, const char *to, int ours, char *err,
                      size_t errlen)
{
    json_t *in, *j = NULL;
    char why[256] = "out of memory";
    long status = 0;
    size_t len = strlen(err);

    if (!ours)
        return;
    in = json_pack("{s:b}", "on", 0);
    if (in && call(na, to, "POST", url, in, now_ms() + 10000, &status, &j, why, sizeof(why)) == 0 &&
        status == 200)
        snprintf(err + len, errlen - len,
                 "; maintenance taken back: its objects answer 503 while it is away, not 404");
    else
        snprintf(err + len, errlen - len, "; taking maintenance back failed too (%s)",
                 in && status ? "refused" : why);
    json_decref(in);
    json_decref(j);
}

/* Whether a live target other than id, without flags, is in s (one to take its objects). */
static int others_in_service(const struct hd_smap *s, const char *id)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (s->nodes[i].type == HD_NODE_TARGET && !s->nodes[i].down && !s->nodes[i].flags &&
            strcmp(s->nodes[i].id, id) != 0)
            return 1;
    return 0;
}

int hd_tcluster_prestop(const struct hd_config *cfg, long timeout_s, FILE *out, char *err,
                        size_t errlen)
{
    long long t0 = now_ms(), deadline = t0 + (long long)timeout_s * 1000, next_note;
    char join[HD_NODE_URL_MAX], id[HD_NODE_ID_MAX], url[HD_NODE_URL_MAX * 2], rb[HD_NODE_ID_MAX],
        pid[HD_NODE_ID_MAX];
    struct hd_nodeauth *na = NULL;
    struct hd_smap *s = NULL;
    const struct hd_node *self, *prim;
    json_t *in = NULL, *ans = NULL;
    int64_t v;
    long status;
    int rc = -1, ours;

    if (timeout_s <= 0)
        return fail(err, errlen, "--prestop-timeout must be a positive number of seconds");
    snprintf(join, sizeof(join), "%s", hd_config_str(cfg, "cluster.join"));
    while (*join && join[strlen(join) - 1] == '/')
        join[strlen(join) - 1] = '\0';
    if (!*join) {
        fprintf(out, "prestop: standalone target (no cluster.join): nothing to hand over\n");
        return 0;
    }
    if (node_id(cfg, id, err, errlen) < 0)
        return -1;
    if (hd_nodeauth_new(hd_config_str(cfg, "cluster.secret"), id, &na) < 0)
        return fail(err, errlen, "out of memory");
    if ((rc = fetch_smap(na, join, deadline, &s, err, errlen)) < 0) {
        if (rc == PRESTOP_REFUSED && not_member(na, join, id, deadline)) {
            /* after a decommission: the primary forgot it, and its objects live elsewhere */
            fprintf(out,
                    "prestop: %s is not in the cluster map (decommissioned?): nothing to "
                    "hand over\n",
                    id);
            rc = 0;
        } else {
            rc = -1;
        }
        goto out;
    }
    rc = -1;
    self = hd_smap_find(s, id);
    if (!self || self->type != HD_NODE_TARGET) {
        fail(err, errlen, "%s is not a target of the cluster map that %s holds (smap v%lld)", id,
             join, (long long)s->version);
        goto out;
    }
    if (!others_in_service(s, id)) {
        /* maintenance would leave its objects with no owner at all, before the stop too */
        fprintf(out,
                "prestop: no other target in service can take over %s's objects: "
                "stopping without maintenance (they answer 503 until it is back)\n",
                id);
        rc = 0;
        goto out;
    }
    prim = hd_smap_find(s, s->primary);
    if (!prim) {
        fail(err, errlen, "the cluster map from %s names no reachable primary", join);
        goto out;
    }
    snprintf(url, sizeof(url), "%s/v1/cluster/maintenance/%s", prim->url, id);
    snprintf(pid, sizeof(pid), "%s", prim->id);
    in = json_pack("{s:b, s:b}", "on", 1, "restart", 1);
    if (!in || call(na, pid, "POST", url, in, deadline, &status, &ans, err, errlen) < 0)
        goto out;
    if (status != 200 || !json_is_integer(json_object_get(ans, "version"))) {
        const char *m = json_string_value(json_object_get(ans, "message"));
        fail(err, errlen, "the primary %s refused maintenance for %s: HTTP %ld%s%s", prim->id, id,
             status, m ? ": " : "", m ? m : "");
        goto out;
    }
    v = (int64_t)json_integer_value(json_object_get(ans, "version"));
    ours = (json_integer_value(
                json_object_get(json_object_get(json_object_get(ans, "tmap"), id), "flags")) &
            HD_NODE_RESTART) != 0;
    snprintf(rb, sizeof(rb), "%s",
             json_string_value(json_object_get(ans, "rebalance_id"))
                 ? json_string_value(json_object_get(ans, "rebalance_id"))
                 : "");
    fprintf(out,
            "prestop: %s in maintenance until it rejoins (smap v%lld); waiting for %s to move "
            "its objects (at most %ld s)\n",
            id, (long long)v, *rb ? rb : "the rebalance", timeout_s);
    fflush(out);
    next_note = now_ms() + 10000;
    for (;;) {
        hd_smap_unref(s);
        s = NULL;
        if (fetch_smap(na, join, deadline, &s, err, errlen) < 0) {
            take_back(na, url, pid, ours, err, errlen);
            goto out;
        }
        if (s->version > v && !s->rebalance[0])
            break;
        if (now_ms() >= deadline) {
            fail(err, errlen,
                 "timed out after %ld s waiting for the rebalance (smap v%lld, %s) to finish: "
                 "some of %s's objects may not be elsewhere yet",
                 timeout_s, (long long)s->version, *s->rebalance ? s->rebalance : "marked", id);
            take_back(na, url, pid, ours, err, errlen);
            goto out;
        }
        if (now_ms() >= next_note) {
            fprintf(out, "prestop: %s still running (%lld s)\n", *s->rebalance ? s->rebalance : rb,
                    (now_ms() - t0) / 1000);
            fflush(out);
            next_note += 10000;
        }
        nap_ms(PRESTOP_POLL_MS);
    }
    fprintf(out,
            "prestop: done in %.1f s: %s's objects are served by the other targets (smap "
            "v%lld)\n",
            (double)(now_ms() - t0) / 1000.0, id, (long long)s->version);
    rc = 0;
out:
    json_decref(in);
    json_decref(ans);
    hd_smap_unref(s);
    hd_nodeauth_free(na);
    return rc;
}
