"""The primary's lease is renewed on a thread of its own (docs/cluster.md "Primary election",
"Threads"): a fan-out of the loop thread that hangs on a target (here a target stopped with
SIGSTOP: its kernel accepts the connections, nobody answers, so each call waits for its
timeout, 10 s for a metasync push and 30 s for starting a rebalance job) must not cost the
primary its lease. Before, the lease was renewed by the same loop thread: it lapsed after
L = heartbeat_ms * dead_after, cluster changes answered 503, and the followers, hearing no
lease, elected another primary.

The other side of that: a loop thread that is stuck (not waiting on a bounded call: a bug,
or a starved process) must not keep its lease, or no other proxy could ever take over. The
lease thread watches the loop thread's ticks and gives the lease up after
cluster.loop_stall_ms (test_stuck_loop_thread_gives_the_lease_up)."""

import ctypes
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


# ---- a stuck loop thread ----

STALL_MS = 3000
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
WALL = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long


def _ptrace(req, tid):
    if _libc.ptrace(req, tid, None, None) < 0:
        e = ctypes.get_errno()
        raise OSError(e, "ptrace(%#x, %d): %s" % (req, tid, os.strerror(e)))


def thread_id(pid, name):
    """The id of pid's thread called name (hd_ticker names its threads)."""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == name:
                return int(tid)
    raise AssertionError("no thread %r in process %d" % (name, pid))


class ThreadStop:
    """Stops one thread of a process (the others run on), as a deadlock in it would:
    PTRACE_SEIZE + PTRACE_INTERRUPT on that thread alone; PTRACE_DETACH lets it go."""

    def __init__(self, tid):
        self.tid = tid
        _ptrace(PTRACE_SEIZE, tid)
        try:
            _ptrace(PTRACE_INTERRUPT, tid)
            os.waitpid(tid, WALL)  # stopped now
        except BaseException:
            self.resume()
            raise

    def resume(self):
        if self.tid:
            _ptrace(PTRACE_DETACH, self.tid)
            self.tid = None


@pytest.fixture(scope="module")
def stall_cluster(tmp_path_factory, log_dir):
    c, nodes = start_voters(tmp_path_factory, log_dir, "lw-", 1, HB_MS, DEAD_AFTER,
                            proxy_args=["--cluster.loop_stall_ms", str(STALL_MS)])
    yield c
    _stop_nodes(nodes)


def test_stuck_loop_thread_gives_the_lease_up(stall_cluster):
    c = stall_cluster
    p1, p2, p3 = c.proxies
    p1_id = p1.health()["id"]
    before = views(c)
    assert len(set(before)) == 1 and before[0][1] == p1_id, before
    term0 = before[0][0]
    with open(p1.error_log, "rb") as f:
        f.seek(0, os.SEEK_END)
        log_from = f.tell()

    stop = ThreadStop(thread_id(p1.proc.pid, "proxy-loop"))
    try:
        # p1's lease thread and HTTP workers run on; its loop thread does not tick. After
        # cluster.loop_stall_ms p1 stops renewing, the followers' promises run out and they
        # elect one of themselves. Without the watchdog p1 renews forever: no election.
        def elected():
            v = [p.smap() for p in (p2, p3)]
            new = {(s["term"], s["primary"]) for s in v}
            return len(new) == 1 and v[0]["term"] > term0 and v[0]["primary"] != p1_id

        helpers.wait_until(elected, timeout=60, interval=0.3,
                           what="a new primary elected by p2 and p3")
        # the new primary commits changes while p1's loop is still stuck
        name = "lw-" + uuid.uuid4().hex[:8]
        r = api("POST", p3.url + "/v1/buckets/" + name, timeout=60)
        assert r.status_code in (200, 201), r.text
        helpers.wait_until(lambda: all(name in n.bmd()["buckets"] for n in [p2, p3] + c.targets),
                           timeout=30, what="the bucket on the new primary's nodes")
    finally:
        stop.resume()
    with open(p1.error_log, "rb") as f:
        f.seek(log_from)
        log = f.read().decode(errors="replace")
    assert "giving the lease up" in log, log[-2000:]

    # p1's loop runs again: it follows the new primary, and exactly one primary is left
    def one_primary():
        v = views(c)
        return len(set(v)) == 1 and v[0][0] > term0 and v[0][1] != p1_id

    helpers.wait_until(one_primary, timeout=60, interval=0.3, what="all three on the new primary")
    assert not p1.health()["primary"]
    name = "lw-" + uuid.uuid4().hex[:8]
    r = api("POST", p1.url + "/v1/buckets/" + name, timeout=60)  # forwarded to the new primary
    assert r.status_code in (200, 201), r.text
    helpers.wait_until(lambda: all(name in n.bmd()["buckets"] for n in c.proxies + c.targets),
                       timeout=30, what="the bucket on every node")
