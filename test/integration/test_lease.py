"""The primary's lease is renewed on a thread of its own (docs/cluster.md "Primary election",
"Threads"): a fan-out of the loop thread that hangs on a target (here a target stopped with
SIGSTOP: its kernel accepts the connections, nobody answers, so each call waits for its
timeout, 10 s for a metasync push and 30 s for starting a rebalance job) must not cost the
primary its lease. Before, the lease was renewed by the same loop thread: it lapsed after
L = heartbeat_ms * dead_after, cluster changes answered 503, and the followers, hearing no
lease, elected another primary."""

import os
import signal
import uuid

import pytest

import helpers
from conftest import _stop_nodes
from test_cluster import api, start_voters

HB_MS = 300
DEAD_AFTER = 5  # L = 1.5 s; a follower that hears no lease campaigns after 1.8 to 3.9 s
L_MS = HB_MS * DEAD_AFTER


@pytest.fixture(scope="module")
def lc(tmp_path_factory, log_dir):
    c, nodes = start_voters(tmp_path_factory, log_dir, "ls-", 2, HB_MS, DEAD_AFTER)
    yield c
    _stop_nodes(nodes)


def views(c):
    """(term, primary) as each proxy sees it."""
    out = []
    for p in c.proxies:
        s = p.smap()
        out.append((s["term"], s["primary"]))
    return out


def test_fanout_hanging_on_a_target_keeps_the_lease(lc):
    c = lc
    p1, p2, p3 = c.proxies
    t2 = c.targets[1]
    t2_id = t2.health()["id"]
    before = views(c)
    assert len(set(before)) == 1 and before[0][1] == p1.health()["id"], before
    with open(p1.error_log, "rb") as f:
        f.seek(0, os.SEEK_END)
        log_from = f.tell()

    t2.proc.send_signal(signal.SIGSTOP)
    try:
        # the primary's loop thread pushes the marked map to every node, then starts the
        # rebalance job on every target: both calls to t2 hang until their timeouts
        r = api("POST", p1.url + "/v1/cluster/rebalance")
        assert r.status_code == 202, r.text

        def stalled():
            # every proxy still follows the same primary in the same term (no election) ...
            now = views(c)
            assert now == before, (before, now)
            # ... which still commits cluster changes (they need its lease), also one that
            # a follower forwards
            for via in (p1, p3):
                r = api("POST", via.url + "/v1/cluster/rebalance", timeout=30)
                assert r.status_code == 202, (via.name, r.status_code, r.text)
            # done once t2 has been silent for many leases without being marked down:
            # failure detection (the same loop thread) is held up all that time, so the
            # lease outlived a stall of that length
            s = p1.smap()
            assert t2_id in s["tmap"], s
            return s["heartbeat_age_ms"].get(t2_id, 0) > 6 * L_MS

        helpers.wait_until(stalled, timeout=60, interval=0.3,
                           what="t2 silent for 6 leases while the primary's loop waits on it")
    finally:
        t2.proc.send_signal(signal.SIGCONT)
    assert views(c) == before
    with open(p1.error_log, "rb") as f:
        f.seek(log_from)
        log = f.read().decode(errors="replace")
    assert "lease lost" not in log, log[-2000:]
    # the cluster goes on: a bucket through a follower, held by every node
    name = "ls-" + uuid.uuid4().hex[:8]
    r = api("POST", p2.url + "/v1/buckets/" + name, timeout=60)
    assert r.status_code in (200, 201), r.text
    helpers.wait_until(lambda: all(name in n.bmd()["buckets"] for n in c.proxies + c.targets),
                       timeout=30, what="the bucket on every node")
    assert views(c) == before
