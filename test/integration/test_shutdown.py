"""A node's stop is bounded (server/main.c: a signal thread and a watchdog). The stuck case is
real: a proxy relaying a GET to a target that no longer answers (SIGSTOP) takes many seconds
to stop on its own; with shutdown.timeout it exits (code 1, logged) once that bound passes, and
a second SIGTERM ends a slow stop at once."""
import os
import signal
import threading

import requests

import helpers
from cachefix import C_KEYS, HoardCluster
from conftest import _TARGETS


def unread_bytes_at(port):
    """Bytes waiting, unread, in sockets accepted on 127.0.0.1:port (/proc/net/tcp)."""
    total = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, state, queues = fields[1], fields[3], fields[4]
            if int(local.split(":")[1], 16) == port and state == "01":
                total += int(queues.split(":")[1], 16)
    return total


def stuck_proxy(tmp_path, log_dir, shutdown_timeout):
    """A 1-target cluster whose target is frozen (SIGSTOP) while the proxy, in a request
    handler, sends it a bucket change (metasync: the proxy waits up to 10 s for it)."""
    c = HoardCluster("stop", str(tmp_path), log_dir, _TARGETS, C_KEYS, ntargets=1,
                     proxy_extra=["--shutdown.timeout", str(shutdown_timeout)])
    c.start()
    t = c.targets[0]
    os.kill(t.proc.pid, signal.SIGSTOP)

    def create():
        try:
            c.api("POST", "/v1/buckets/stop-bkt", timeout=120)
        except requests.RequestException:
            pass  # the proxy goes away under it
    threading.Thread(target=create, daemon=True).start()
    helpers.wait_until(lambda: unread_bytes_at(t.port) > 0, timeout=30,
                       what="the proxy's metasync waiting on the frozen target")
    return c


def finish(c):
    try:
        os.kill(c.targets[0].proc.pid, signal.SIGCONT)
    except (ProcessLookupError, AttributeError):
        pass
    return c.stop()


def test_stop_is_bounded_by_shutdown_timeout(tmp_path, log_dir):
    c = stuck_proxy(tmp_path, log_dir, 1)
    p = c.proxy
    try:
        p.mark_log()
        p.proc.send_signal(signal.SIGTERM)
        rc = p.proc.wait(120)  # generous: the bound itself is 1 s
        log = p.log_tail(40, since_mark=True)
        assert "stopping (signal 15; at most 1 s)" in log, log
        assert "stop took longer than shutdown.timeout (1 s): exiting now" in log, log
        assert rc == 1, log
    finally:
        finish(c)


def test_second_sigterm_ends_a_slow_stop_at_once(tmp_path, log_dir):
    c = stuck_proxy(tmp_path, log_dir, 3600)
    p = c.proxy
    try:
        p.mark_log()
        p.proc.send_signal(signal.SIGTERM)
        helpers.wait_until(lambda: "stopping (signal 15" in p.log_tail(40, since_mark=True),
                           timeout=30, what="the stop to begin")
        p.proc.send_signal(signal.SIGTERM)
        rc = p.proc.wait(120)
        log = p.log_tail(40, since_mark=True)
        assert "second signal 15 while stopping: exiting now" in log, log
        assert rc == 1, log
    finally:
        finish(c)


def test_plain_stop_exits_zero(tmp_path, log_dir):
    """Nothing stuck: SIGTERM is an orderly stop, exit code 0, within the default bound."""
    c = HoardCluster("stop0", str(tmp_path), log_dir, _TARGETS, C_KEYS, ntargets=1)
    c.start()
    assert c.api("POST", "/v1/buckets/stop-bkt").status_code == 201
    problems = c.stop()
    assert problems == [], problems
