/* role: whether this proxy is the primary, the term it is in (persisted with the vote it gave
 * in that term), who votes, and the primary's books of who was heard from. The election
 * itself is cluster/elect.c; docs/cluster.md has the rules. Any thread; nothing blocks but
 * the node.db writes of a term change. */
#include "proxy/core/core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/httputil.h"
#include "common/log.h"

int hd_proxy_role_init(struct hd_proxy *p)
{
    char *v = NULL;
    int64_t t = 0;

    if (hd_smap_state_meta_get(p->cs, "term", &v) == 0 && hd_parse_i64(v, &t) < 0)
        t = 0;
    free(v);
    v = NULL;
    atomic_store(&p->term, t);
    if (hd_smap_state_meta_get(p->cs, "voted_for", &v) == 0)
        snprintf(p->voted_for, sizeof(p->voted_for), "%s", v);
    free(v);
    p->lease_ms = p->hb_ms * p->dead_after;
    p->boot_ns = hd_now_ns();
    return 0;
}

size_t hd_proxy_voters(const struct hd_smap *s, const struct hd_node **out, size_t max)
{
    size_t i, n = 0;

    if (!s)
        return 0;
    if (hd_smap_count(s, HD_NODE_PROXY, 0) < 3) {
        const struct hd_node *p = hd_smap_find(s, s->primary);
        if (p && max)
            out[n++] = p;
        return n;
    }
    for (i = 0; i < s->n && n < max; i++)
        if (s->nodes[i].type == HD_NODE_PROXY)
            out[n++] = &s->nodes[i];
    return n;
}

size_t hd_proxy_quorum(const struct hd_smap *s)
{
    size_t n = hd_smap_count(s, HD_NODE_PROXY, 0);

    return n < 3 ? 1 : n / 2 + 1;
}

int hd_proxy_is_voter(const struct hd_smap *s, const char *id)
{
    const struct hd_node *n = s ? hd_smap_find(s, id) : NULL;

    if (!n || n->type != HD_NODE_PROXY)
        return 0;
    return hd_smap_count(s, HD_NODE_PROXY, 0) >= 3 || strcmp(s->primary, id) == 0;
}

/* caller holds term_mu */
static int persist(struct hd_proxy *p, int64_t term, const char *voted_for)
{
    char buf[32];
    int rc;

    snprintf(buf, sizeof(buf), "%" PRId64, term);
    /* voted_for first: a crash between the two leaves the old term with a vote cleared or
     * the new term with no vote, never a vote carried into another term */
    if ((rc = hd_smap_state_meta_set(p->cs, "voted_for", "")) < 0 ||
        (rc = hd_smap_state_meta_set(p->cs, "term", buf)) < 0 ||
        (voted_for[0] && (rc = hd_smap_state_meta_set(p->cs, "voted_for", voted_for)) < 0)) {
        HD_LOG(HD_ERROR, NULL, "cluster: cannot persist term %" PRId64 ": %s", term,
               hd_strerror(rc));
        return rc;
    }
    atomic_store(&p->term, term);
    snprintf(p->voted_for, sizeof(p->voted_for), "%s", voted_for);
    return 0;
}

int hd_proxy_term_adopt(struct hd_proxy *p, int64_t term, const char *why)
{
    int rc;

    pthread_mutex_lock(&p->term_mu);
    if (term <= atomic_load(&p->term)) {
        pthread_mutex_unlock(&p->term_mu);
        return -ESTALE;
    }
    rc = persist(p, term, "");
    pthread_mutex_unlock(&p->term_mu);
    if (rc == 0) {
        HD_LOG(HD_INFO, NULL, "cluster: term %" PRId64 " (%s)", term, why);
        if (atomic_load(&p->primary))
            hd_proxy_step_down(p, why);
    }
    return rc;
}

int hd_proxy_term_vote(struct hd_proxy *p, int64_t term, const char *candidate)
{
    int64_t cur;
    int ok = 0, was_primary = 0;

    pthread_mutex_lock(&p->term_mu);
    cur = atomic_load(&p->term);
    if (term > cur) {
        was_primary = atomic_load(&p->primary);
        ok = persist(p, term, candidate) == 0;
    } else if (term == cur && (!p->voted_for[0] || strcmp(p->voted_for, candidate) == 0)) {
        ok = p->voted_for[0] || persist(p, term, candidate) == 0;
    }
    pthread_mutex_unlock(&p->term_mu);
    if (was_primary && ok && strcmp(candidate, p->self.id) != 0)
        hd_proxy_step_down(p, "voted for another proxy");
    return ok;
}

int hd_proxy_has_lease(struct hd_proxy *p)
{
    const struct hd_node *v[2];
    struct hd_smap *s;
    int sole;

    if (!atomic_load(&p->primary))
        return 0;
    if (hd_now_ns() < atomic_load(&p->lease_until_ns))
        return 1;
    /* The only voter (fewer than 3 proxies): no election can replace it, so its lease cannot
     * lapse, even when the thread that renews it is held up longer than the lease (a loaded
     * machine): nothing would be gained by refusing bucket changes with 503 meanwhile. */
    s = hd_smap_state_smap(p->cs);
    sole = s && hd_proxy_voters(s, v, 2) == 1 && strcmp(v[0]->id, p->self.id) == 0;
    hd_smap_unref(s);
    return sole;
}

void hd_proxy_step_down(struct hd_proxy *p, const char *why)
{
    if (!atomic_exchange(&p->primary, 0))
        return;
    atomic_store(&p->lease_until_ns, 0);
    atomic_store(&p->heard_ns, hd_now_ns()); /* a fresh follower waits a full timeout */
    HD_LOG(HD_WARN, NULL, "cluster: no longer the primary (%s): following", why);
}

struct hd_proxy_seen *hd_proxy_seen_find(struct hd_proxy *p, const char *id)
{
    size_t i;

    for (i = 0; i < p->nseen; i++)
        if (strcmp(p->seen[i].id, id) == 0)
            return &p->seen[i];
    return NULL;
}

void hd_proxy_seen_mark(struct hd_proxy *p, const char *id, uint64_t now)
{
    struct hd_proxy_seen *s = hd_proxy_seen_find(p, id), *nv;

    if (!s) {
        nv = realloc(p->seen, (p->nseen + 1) * sizeof(*nv));
        if (!nv)
            return;
        p->seen = nv;
        s = &p->seen[p->nseen++];
        snprintf(s->id, sizeof(s->id), "%s", id);
    }
    s->last_ns = now;
}
