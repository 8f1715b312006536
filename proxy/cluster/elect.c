/* elect: the primary's lease and the election of a new primary (docs/cluster.md, "Primary
 * election"). With three or more proxies every proxy votes; a change counts once a majority
 * holds it (metasync.c, hd_proxy_commit), so two primaries can never both commit, whatever
 * the network does; leases only keep a primary that lost its majority from answering as if
 * it had it, and followers from electing while it is alive.
 *
 *   primary, each heartbeat: POST /v1/cluster/lease {term} to every voter; a voter that
 *     grants promises not to vote for L = hb * dead_after from its reception. The primary
 *     holds the lease while a majority's grants (itself included) are younger than L minus
 *     10%, measured from when it sent them. Without it: 503 to changes, no failure detection.
 *   follower, no lease for E = L + hb + 2 hb x rank + jitter: pre-vote (would you?), then
 *     term + 1 persisted with its own vote, then the vote; with a majority it takes the
 *     newest smap and BMD among the answers, makes itself primary of the new term and
 *     commits that before anything else.
 *
 * The lease is renewed on a thread of its own (the lease ticker: nothing else runs there),
 * so that the loop thread's fan-outs to targets (metasync, rebalance, failure probes, up to
 * 30 s each when a target hangs) never hold it up past L: that lost the lease (503 to
 * changes) and, as the followers stopped hearing from the primary, started a needless
 * election. The election tick runs on the loop thread (a follower's loop only heartbeats
 * the primary, with short timeouts); the two handlers run on HTTP workers and block only on
 * node.db writes. */
#include "proxy/cluster/cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/errors.h"
#include "common/httpc.h"
#include "common/log.h"
#include "common/nodeauth.h"

#define MAX_VOTERS 64

static uint64_t ms_ns(long ms)
{
    return (uint64_t)ms * 1000000ull;
}

static long call_ms(struct hd_proxy *p)
{
    return p->hb_ms > 1000 ? 1000 : (p->hb_ms < 200 ? 200 : p->hb_ms);
}

/* ---- the primary's lease ---- */

static void grant_note(struct hd_proxy *p, const char *id, uint64_t sent)
{
    struct hd_proxy_grant *g;
    size_t i;

    pthread_mutex_lock(&p->grant_mu);
    for (i = 0; i < p->ngrants && strcmp(p->grants[i].id, id) != 0; i++)
        ;
    if (i == p->ngrants) {
        g = realloc(p->grants, (p->ngrants + 1) * sizeof(*g));
        if (!g) {
            pthread_mutex_unlock(&p->grant_mu);
            return;
        }
        p->grants = g;
        snprintf(p->grants[p->ngrants].id, sizeof(p->grants[0].id), "%s", id);
        p->grants[p->ngrants++].sent_ns = 0;
    }
    if (sent > p->grants[i].sent_ns)
        p->grants[i].sent_ns = sent;
    pthread_mutex_unlock(&p->grant_mu);
}

/* The lease ends when fewer than a majority's grants are younger than L - 10%: the
 * quorum-th youngest grant, us counted as granting now. */
static void lease_update(struct hd_proxy *p, struct hd_smap *s, uint64_t now)
{
    const struct hd_node *v[MAX_VOTERS];
    uint64_t sent[MAX_VOTERS], life = ms_ns(p->lease_ms) - ms_ns(p->lease_ms) / 10, t;
    size_t n = hd_proxy_voters(s, v, MAX_VOTERS), q = hd_proxy_quorum(s), i, j, k = 0;

    pthread_mutex_lock(&p->grant_mu);
    for (i = 0; i < n; i++) {
        if (strcmp(v[i]->id, p->self.id) == 0) {
            sent[k++] = now;
            continue;
        }
        for (j = 0; j < p->ngrants; j++)
            if (strcmp(p->grants[j].id, v[i]->id) == 0 && p->grants[j].sent_ns)
                sent[k++] = p->grants[j].sent_ns;
    }
    pthread_mutex_unlock(&p->grant_mu);
    if (k < q) {
        atomic_store(&p->lease_until_ns, 0);
        return;
    }
    for (i = 0; i < k; i++) /* descending */
        for (j = i + 1; j < k; j++)
            if (sent[j] > sent[i]) {
                t = sent[i];
                sent[i] = sent[j];
                sent[j] = t;
            }
    atomic_store(&p->lease_until_ns, sent[q - 1] + life);
}

/* Whether the loop thread (failure detection, metasync, rebalance) has gone without a tick
 * for cluster.loop_stall_ms: every call it makes is bounded (30 s at most, a few in a
 * tick), so that is a bug or a starved process, and a primary that cannot act must not keep
 * the followers from electing one that can. */
static int loop_stuck(struct hd_proxy *p)
{
    uint64_t silent = hd_ticker_silent_ns(&p->ticker);
    int stuck = silent > ms_ns(p->loop_stall_ms);

    if (stuck && !p->loop_stuck)
        HD_LOG(HD_ERROR, NULL,
               "cluster: the loop thread (failure detection, metasync, rebalance) has not "
               "ticked for %llu ms (cluster.loop_stall_ms %ld): giving the lease up so that "
               "another proxy can take over as primary",
               (unsigned long long)(silent / 1000000), p->loop_stall_ms);
    else if (!stuck && p->loop_stuck)
        HD_LOG(HD_WARN, NULL, "cluster: the loop thread ticks again");
    p->loop_stuck = stuck;
    return stuck;
}

void hd_proxy_lease_tick(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    const struct hd_node *v[MAX_VOTERS];
    struct hd_httpc_call calls[MAX_VOTERS];
    char urls[MAX_VOTERS][HD_NODE_URL_MAX + 24], *body = NULL;
    const char *ids[MAX_VOTERS];
    size_t nv = hd_proxy_voters(s, v, MAX_VOTERS), n = 0, i;
    int64_t term, newer = 0;
    uint64_t sent = hd_now_ns();
    int had = hd_proxy_has_lease(p);

    if (!atomic_load(&p->primary))
        goto out;
    if (loop_stuck(p)) { /* no renewal: the voters' promises run out */
        atomic_store(&p->lease_until_ns, 0);
        goto out;
    }
    term = atomic_load(&p->term); /* the term we are primary of (read after the check) */
    if (!s) {                     /* a new cluster's first proxy: the only voter there is */
        atomic_store(&p->lease_until_ns, sent + ms_ns(p->lease_ms) - ms_ns(p->lease_ms) / 10);
        goto out;
    }
    {
        json_t *j = json_pack("{s:I}", "term", (json_int_t)term);
        body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
    }
    if (!body)
        goto out;
    for (i = 0; i < nv; i++) {
        if (strcmp(v[i]->id, p->self.id) == 0)
            continue;
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/cluster/lease", v[i]->url);
        hd_httpc_call_init(&calls[n], "POST", urls[n]);
        calls[n].na = p->na;
        snprintf(calls[n].to, sizeof(calls[n].to), "%s", v[i]->id);
        calls[n].signed_resp = 1;
        calls[n].body = body;
        calls[n].blen = strlen(body);
        calls[n].ctype = "application/json";
        calls[n].connect_ms = call_ms(p);
        calls[n].total_ms = call_ms(p);
        ids[n++] = v[i]->id;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        json_t *j = calls[i].rc == 0 && calls[i].resp.len
                        ? json_loadb(calls[i].resp.data, calls[i].resp.len, 0, NULL)
                        : NULL;
        int64_t t = (int64_t)json_integer_value(json_object_get(j, "term"));
        if (calls[i].rc == 0 && calls[i].status == 200 &&
            json_is_true(json_object_get(j, "granted")) && t == term)
            grant_note(p, ids[i], sent);
        else if (t > newer)
            newer = t;
        json_decref(j);
        hd_httpc_call_cleanup(&calls[i]);
    }
    if (newer > term) {
        hd_proxy_term_adopt(p, newer, "a voter is in a newer term");
        goto out;
    }
    /* stepped down or elected again while we asked (other threads): these grants were for
     * another primacy */
    if (!atomic_load(&p->primary) || atomic_load(&p->term) != term)
        goto out;
    lease_update(p, s, hd_now_ns());
    if (had && !hd_proxy_has_lease(p))
        HD_LOG(HD_WARN, NULL,
               "cluster: lease lost: fewer than %zu of %zu voters answer; "
               "refusing cluster changes until they do",
               hd_proxy_quorum(s), nv);
    else if (!had && hd_proxy_has_lease(p))
        HD_LOG(HD_INFO, NULL, "cluster: lease held (term %" PRId64 ")", term);
out:
    free(body);
    hd_smap_unref(s);
}

static void lease_thread_tick(void *arg)
{
    hd_proxy_lease_tick(arg);
}

int hd_proxy_lease_start(struct hd_proxy *p)
{
    return hd_ticker_start(&p->lease_ticker, "proxy-lease", (uint64_t)p->hb_ms, lease_thread_tick,
                           NULL, p);
}

void hd_proxy_lease_stop(struct hd_proxy *p)
{
    hd_ticker_stop(&p->lease_ticker);
}

/* POST /v1/cluster/lease {term} from the primary (signature checked by the caller) */
void hd_proxy_on_lease(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    const char *from = hd_req_header(r, "X-Hoard-Node");
    json_t *t = json_object_get(j, "term");
    int64_t term, mine;
    int granted = 0;

    if (!json_is_integer(t) || !from || json_integer_value(t) < 0) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"term\": N}.");
        return;
    }
    term = (int64_t)json_integer_value(t);
    if (term > atomic_load(&p->term))
        hd_proxy_term_adopt(p, term, "a lease from the primary of a newer term");
    mine = atomic_load(&p->term);
    /* in a term there is one primary (a majority elected it): follow it */
    if (term == mine && !atomic_load(&p->primary)) {
        granted = 1;
        atomic_store(&p->heard_ns, hd_now_ns());
    }
    hd_resp_json(r, 200, json_pack("{s:b, s:I}", "granted", granted, "term", (json_int_t)mine));
}

/* ---- voting ---- */

/* Would we vote now? Not while we follow a primary that renews its lease, nor while we are
 * one with a lease, nor in the first L after start (we may have promised a lease). */
static int lease_promised(struct hd_proxy *p, uint64_t now)
{
    uint64_t l = ms_ns(p->lease_ms);

    if (now - p->boot_ns < l)
        return 1;
    if (atomic_load(&p->primary))
        return hd_proxy_has_lease(p);
    return now - atomic_load(&p->heard_ns) < l;
}

/* POST /v1/cluster/vote {term, candidate, prevote} (signature checked by the caller) */
void hd_proxy_on_vote(struct hd_req *r, struct hd_proxy *p, json_t *j)
{
    const char *from = hd_req_header(r, "X-Hoard-Node");
    const char *cand = json_string_value(json_object_get(j, "candidate"));
    json_t *t = json_object_get(j, "term"), *out;
    int prevote = json_is_true(json_object_get(j, "prevote"));
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    int64_t term;
    int granted = 0;
    const char *why = "granted";

    if (!json_is_integer(t) || !cand || (from && strcmp(from, cand) != 0)) {
        hd_resp_err_msg(r, HD_EBADARG, "Expected {\"term\", \"candidate\": <the sender>}.");
        goto out;
    }
    term = (int64_t)json_integer_value(t);
    if (!hd_proxy_is_voter(s, cand))
        why = "the candidate does not vote in our map";
    else if (lease_promised(p, hd_now_ns()))
        why = "we still hear from the primary";
    else if (term <= atomic_load(&p->term))
        why = "its term is not newer than ours";
    else if (prevote)
        granted = 1;
    else if (!(granted = hd_proxy_term_vote(p, term, cand)))
        why = "we voted for another in that term";
    if (granted && !prevote) {
        atomic_store(&p->heard_ns, hd_now_ns()); /* the candidate may be primary: a lease */
        HD_LOG(HD_INFO, NULL, "cluster: voted for %s in term %" PRId64, cand, term);
    }
    out = json_pack("{s:b, s:I, s:s}", "granted", granted, "term",
                    (json_int_t)atomic_load(&p->term), "reason", why);
    if (granted && !prevote && out) {
        if (s)
            json_object_set_new(out, "smap", hd_smap_to_json(s));
        json_object_set_new(out, "bmd", hd_bmd_to_json(b));
    }
    hd_resp_json(r, 200, out);
out:
    hd_smap_unref(s);
    hd_bmd_unref(b);
}

struct ballot {
    size_t grants;
    int64_t newer; /* a higher term seen in an answer */
    struct hd_smap *best;
    struct hd_bmd *best_bmd;
};

static void ballot_cleanup(struct ballot *bt)
{
    hd_smap_unref(bt->best);
    hd_bmd_unref(bt->best_bmd);
}

/* Asks every other voter of s; grants counted in *bt (ourselves included). */
static void ask(struct hd_proxy *p, struct hd_smap *s, int64_t term, int prevote, struct ballot *bt)
{
    const struct hd_node *v[MAX_VOTERS];
    struct hd_httpc_call calls[MAX_VOTERS];
    char urls[MAX_VOTERS][HD_NODE_URL_MAX + 24], *body;
    size_t nv = hd_proxy_voters(s, v, MAX_VOTERS), n = 0, i;

    memset(bt, 0, sizeof(*bt));
    bt->grants = 1;
    {
        json_t *j = json_pack("{s:I, s:s, s:b}", "term", (json_int_t)term, "candidate", p->self.id,
                              "prevote", prevote);
        body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
    }
    if (!body)
        return;
    for (i = 0; i < nv; i++) {
        if (strcmp(v[i]->id, p->self.id) == 0)
            continue;
        snprintf(urls[n], sizeof(urls[n]), "%s/v1/cluster/vote", v[i]->url);
        hd_httpc_call_init(&calls[n], "POST", urls[n]);
        calls[n].na = p->na;
        snprintf(calls[n].to, sizeof(calls[n].to), "%s", v[i]->id);
        calls[n].signed_resp = 1; /* a forged "granted" must not elect anyone */
        calls[n].body = body;
        calls[n].blen = strlen(body);
        calls[n].ctype = "application/json";
        calls[n].connect_ms = call_ms(p);
        calls[n].total_ms = call_ms(p);
        n++;
    }
    hd_httpc_run_all(calls, n, 0);
    for (i = 0; i < n; i++) {
        json_t *j = calls[i].rc == 0 && calls[i].status == 200 && calls[i].resp.len
                        ? json_loadb(calls[i].resp.data, calls[i].resp.len, 0, NULL)
                        : NULL;
        int64_t t = (int64_t)json_integer_value(json_object_get(j, "term"));
        struct hd_smap *vs = NULL;
        struct hd_bmd *vb = NULL;
        if (t > term && t > bt->newer)
            bt->newer = t;
        if (json_is_true(json_object_get(j, "granted"))) {
            bt->grants++;
            if (!prevote && json_object_get(j, "smap") &&
                hd_smap_from_json(json_object_get(j, "smap"), &vs) == 0 &&
                (!bt->best ||
                 hd_smap_vcmp(vs->term, vs->version, bt->best->term, bt->best->version) > 0)) {
                hd_smap_unref(bt->best);
                bt->best = hd_smap_ref(vs);
            }
            if (!prevote && json_object_get(j, "bmd") &&
                hd_bmd_from_json(json_object_get(j, "bmd"), &vb) == 0 &&
                (!bt->best_bmd || hd_smap_vcmp(vb->term, vb->version, bt->best_bmd->term,
                                               bt->best_bmd->version) > 0)) {
                hd_bmd_unref(bt->best_bmd);
                bt->best_bmd = hd_bmd_ref(vb);
            }
        }
        hd_smap_unref(vs);
        hd_bmd_unref(vb);
        json_decref(j);
        hd_httpc_call_cleanup(&calls[i]);
    }
    free(body);
}

/* Won the vote of term: the newest smap and BMD of the majority become ours, with us as
 * primary of term; committed before we act as primary. */
static int take_over(struct hd_proxy *p, struct ballot *bt, int64_t term, uint64_t asked)
{
    struct hd_smap *mine = hd_smap_state_smap(p->cs), *base, *s = NULL;
    struct hd_bmd *mb = hd_smap_state_bmd(p->cs), *bbase, *b = NULL;
    char old[HD_NODE_ID_MAX];
    size_t i;
    int rc;

    pthread_mutex_lock(&p->mu);
    base = bt->best && (!mine || hd_smap_vcmp(bt->best->term, bt->best->version, mine->term,
                                              mine->version) > 0)
               ? bt->best
               : mine;
    bbase = bt->best_bmd && hd_smap_vcmp(bt->best_bmd->term, bt->best_bmd->version, mb->term,
                                         mb->version) > 0
                ? bt->best_bmd
                : mb;
    if (!base || (rc = hd_smap_clone(base, &s)) < 0 || (rc = hd_bmd_clone(bbase, &b)) < 0) {
        rc = base ? rc : HD_EUNAVAIL;
        goto unlock;
    }
    snprintf(old, sizeof(old), "%s", s->primary);
    snprintf(s->primary, sizeof(s->primary), "%s", p->self.id);
    s->version++;
    b->version++;
    /* the old primary stays a voter, shown down until it comes back and joins */
    for (i = 0; i < s->n; i++)
        if (s->nodes[i].type == HD_NODE_PROXY && strcmp(s->nodes[i].id, old) == 0 &&
            strcmp(old, p->self.id) != 0)
            s->nodes[i].down = 1;
    /* the votes were lease grants too: each voter stopped voting when it answered */
    atomic_store(&p->lease_until_ns, asked + ms_ns(p->lease_ms) - ms_ns(p->lease_ms) / 10);
    atomic_store(&p->primary, 1);
    if ((rc = hd_proxy_commit(p, s, b)) < 0) {
        atomic_store(&p->primary, 0);
        atomic_store(&p->lease_until_ns, 0);
        goto unlock;
    }
    for (i = 0; i < s->n; i++) /* everyone gets dead_after to check in with us */
        hd_proxy_seen_mark(p, s->nodes[i].id, hd_now_ns());
    rc = 0;
unlock:
    pthread_mutex_unlock(&p->mu);
    if (rc == 0) {
        HD_LOG(HD_WARN, NULL,
               "cluster: elected primary for term %" PRId64 " by %zu of %zu voters (was %s); "
               "smap v%lld, BMD v%lld",
               term, bt->grants, hd_smap_count(s, HD_NODE_PROXY, 0), old[0] ? old : "-",
               (long long)s->version, (long long)b->version);
        hd_proxy_sync_now(p); /* targets learn the new primary from this push */
    }
    hd_smap_unref(mine);
    hd_smap_unref(s);
    hd_bmd_unref(mb);
    hd_bmd_unref(b);
    return rc;
}

/* Our rank among the other voters (by id): the first candidate waits least. */
static size_t rank_of(struct hd_proxy *p, struct hd_smap *s)
{
    const struct hd_node *v[MAX_VOTERS];
    size_t n = hd_proxy_voters(s, v, MAX_VOTERS), i, r = 0;

    for (i = 0; i < n; i++)
        if (strcmp(v[i]->id, s->primary) != 0 && strcmp(v[i]->id, p->self.id) < 0)
            r++;
    return r;
}

int hd_proxy_elect_tick(struct hd_proxy *p)
{
    struct hd_smap *s = hd_smap_state_smap(p->cs);
    uint64_t now = hd_now_ns(), wait, heard = atomic_load(&p->heard_ns);
    struct ballot bt;
    int64_t term;
    int expired = 0;

    if (!s || atomic_load(&p->primary) || !hd_proxy_is_voter(s, p->self.id) ||
        hd_smap_count(s, HD_NODE_PROXY, 0) < 3 || now - p->boot_ns < ms_ns(p->lease_ms))
        goto out;
    expired = now - heard >= ms_ns(p->lease_ms);
    /* the lowest-ranked survivor first; a random part breaks ties after a split vote */
    if (!p->elect_wait_ns || p->elect_heard_ns != heard) {
        unsigned short r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = 0;
        p->elect_heard_ns = heard;
        p->elect_wait_ns = ms_ns(p->lease_ms + p->hb_ms + 2 * p->hb_ms * (long)rank_of(p, s)) +
                           ms_ns(p->lease_ms) * r / 65536;
    }
    wait = p->elect_wait_ns;
    if (now - heard < wait)
        goto out;
    term = atomic_load(&p->term) + 1;
    HD_LOG(HD_WARN, NULL, "cluster: no lease from primary %s for %llu ms: asking for term %" PRId64,
           s->primary, (unsigned long long)((now - atomic_load(&p->heard_ns)) / 1000000ull), term);
    ask(p, s, term, 1, &bt);
    if (bt.newer)
        hd_proxy_term_adopt(p, bt.newer, "a voter is in a newer term");
    if (bt.grants < hd_proxy_quorum(s)) {
        HD_LOG(HD_INFO, NULL, "cluster: pre-vote for term %" PRId64 ": %zu of %zu needed", term,
               bt.grants, hd_proxy_quorum(s));
        ballot_cleanup(&bt);
        atomic_store(&p->heard_ns, hd_now_ns()); /* wait a whole timeout again */
        goto out;
    }
    ballot_cleanup(&bt);
    if (!hd_proxy_term_vote(p, term, p->self.id)) /* our own vote, persisted first */
        goto out;
    now = hd_now_ns();
    ask(p, s, term, 0, &bt);
    if (bt.newer) {
        hd_proxy_term_adopt(p, bt.newer, "a voter is in a newer term");
    } else if (bt.grants >= hd_proxy_quorum(s) && atomic_load(&p->term) == term) {
        if (take_over(p, &bt, term, now) < 0)
            HD_LOG(HD_WARN, NULL, "cluster: won term %" PRId64 " but could not commit", term);
    } else {
        HD_LOG(HD_INFO, NULL, "cluster: vote for term %" PRId64 ": %zu of %zu needed", term,
               bt.grants, hd_proxy_quorum(s));
    }
    ballot_cleanup(&bt);
    atomic_store(&p->heard_ns, hd_now_ns());
out:
    hd_smap_unref(s);
    return expired;
}
