"""The one-machine cluster a newcomer meets: `make run` (deploy/local/run.sh: 1 proxy + 3
targets in the foreground, Ctrl-C stops it, data survives) and deploy/local/cluster.sh
(up / down / up in the background), driven with aws CLI and `curl -L` as README shows."""
import os
import random
import re
import signal
import socket
import subprocess
import time

import pytest
import requests

import helpers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("HOARD_BUILD", "build")
AWS = "/usr/bin/aws"


def free_base(n):
    """A port p with p..p+n-1 all free on 127.0.0.1, below the ephemeral range (where the
    kernel hands out ports for outgoing connections, so runs of free ports are rare)."""
    for _ in range(200):
        base = random.randrange(20000, 32000 - n)
        ok = True
        for p in range(base, base + n):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    pytest.fail("no run of free ports")


def hoardd_pids(data_dir):
    """hoardd processes whose command line names data_dir."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"hoardd") and any(data_dir.encode() in a for a in cmd):
            out.append(int(pid))
    return out


def env_for(creds):
    e = dict(os.environ)
    e.update(creds)
    e["AWS_DEFAULT_REGION"] = "us-east-1"
    e.pop("AWS_PROFILE", None)
    return e


def read_creds(path):
    creds = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            creds[k] = v
    return creds


def make_cmd(*targets):
    """make with this run's build directory (and its sanitizer), deps taken as done."""
    cmd = ["make", "--no-print-directory", "-o", "deps", "BUILD=" + BUILD]
    for san in ("asan", "tsan"):
        if BUILD.endswith(san):
            cmd.append("SAN=" + san)
    return cmd + list(targets)


def terminal_signals():
    """What a terminal's shell gives a command: SIGINT, SIGQUIT, SIGTERM and SIGHUP at their
    defaults and none blocked. A suite started in the background by a non-interactive shell
    (`make test &`, a CI runner) inherits SIGINT and SIGQUIT ignored (`nohup` adds SIGHUP),
    and bash can neither trap nor reset a signal ignored at its entry, so run.sh's handler
    would never run; a signal blocked in the forking thread stays blocked in the child, and
    never arrives (seen once in a full run: both stop tests waited 120 s)."""
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Run:
    """deploy/local/run.sh (or `make run`) in its own process group, its output collected.
    stop() always leaves no process behind: whatever the signal did, the group and the
    cluster's nodes (they run in sessions of their own) are killed before it returns."""

    def __init__(self, tmp, port, via_make=False):
        self.tmp, self.port = tmp, port
        self.data = os.path.join(tmp, "hd", "cluster")
        self.out = open(os.path.join(tmp, "run.out"), "ab")
        env = dict(os.environ, HOARD_DIR=os.path.join(tmp, "hd"), HOARD_PORT=str(port),
                   HOARD_BUILD=BUILD)
        cmd = make_cmd("run") if via_make else ["bash", "deploy/local/run.sh"]
        self.p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=self.out,
                                  stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=terminal_signals)

    def text(self):
        with open(os.path.join(self.tmp, "run.out"), "rb") as f:
            return f.read().decode(errors="replace")

    def wait_banner(self):
        helpers.wait_until(lambda: "Ctrl-C stops the cluster" in self.text() or
                           self.p.poll() is not None, timeout=90, what="make run banner")
        assert self.p.poll() is None, self.text()

    def stop(self, sig, group):
        """Sends sig to the process group (what a terminal does) or to the first process
        only (a supervisor, kill PID); returns its exit code once it and every node are
        gone. If they do not go in time, all are killed and the test fails."""
        try:
            if group:
                os.killpg(self.p.pid, sig)
            else:
                self.p.send_signal(sig)
            try:
                rc = self.p.wait(timeout=120)
                # make dies of the SIGTERM it passed on; its recipe (run.sh) goes on stopping
                # the nodes and prints "stopped" after the last one is gone: wait for the
                # whole group, not just the nodes
                helpers.wait_until(lambda: hoardd_pids(self.data) == [] and
                                   not group_alive(self.p.pid), timeout=60,
                                   what="the cluster's nodes and run.sh to stop")
            except Exception:
                left = hoardd_pids(self.data)
                self.kill_all()
                raise AssertionError("signal %d did not stop `make run` (nodes left: %s)\n%s"
                                     % (sig, left, self.text()[-2000:]))
            return rc
        finally:
            self.out.close()

    def kill_all(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in hoardd_pids(self.data):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.p.wait()

    def ctrl_c(self):
        return self.stop(signal.SIGINT, group=True)  # what a terminal sends


@pytest.mark.skipif(not os.path.exists(AWS), reason="aws CLI v2 not installed")
def test_make_run_cluster_foreground(tmp_path):
    tmp = str(tmp_path)
    data = os.path.join(tmp, "hd", "cluster")
    port = free_base(4)
    run = Run(tmp, port)
    try:
        run.wait_banner()
        text = run.text()
        ep = "http://127.0.0.1:%d" % port
        assert "export HOARD_ENDPOINT=%s" % ep in text
        creds = read_creds(os.path.join(data, "credentials"))
        assert re.search(r"AWS_ACCESS_KEY_ID=%s" % creds["AWS_ACCESS_KEY_ID"], text)
        assert requests.get(ep + "/v1/cluster", timeout=5).status_code == 403  # needs a key
        smap = requests.get(ep + "/v1/cluster", timeout=5, headers=helpers.sign_headers(
            "GET", ep + "/v1/cluster", creds["AWS_ACCESS_KEY_ID"],
            creds["AWS_SECRET_ACCESS_KEY"])).json()
        assert len(smap["pmap"]) == 1 and len(smap["tmap"]) == 3
        assert all(len(t["mountpaths"]) == 2 for t in smap["tmap"].values())
        env = env_for(creds)
        src = os.path.join(tmp, "file.bin")
        body = os.urandom(300 * 1024)
        with open(src, "wb") as f:
            f.write(body)
        subprocess.run([AWS, "--endpoint-url", ep, "s3", "mb", "s3://demo"], env=env,
                       check=True, capture_output=True, timeout=60)
        subprocess.run([AWS, "--endpoint-url", ep, "s3", "cp", src, "s3://demo/file.bin"],
                       env=env, check=True, capture_output=True, timeout=60)
        # the curl line the banner prints: 307 to the owning target, followed
        got = subprocess.run(["curl", "-sSf", "-L", "--aws-sigv4", "aws:amz:us-east-1:s3",
                              "--user", "%s:%s" % (creds["AWS_ACCESS_KEY_ID"],
                                                   creds["AWS_SECRET_ACCESS_KEY"]),
                              ep + "/v1/objects/demo/file.bin"], capture_output=True,
                             timeout=60)
        assert got.returncode == 0, got.stderr
        assert got.stdout == body
        # node logs reach the terminal, tagged with the node's name
        helpers.wait_until(lambda: re.search(r"^t[123] +\S+ info ", run.text(), re.M),
                           timeout=10, what="tagged log lines")
        assert len(hoardd_pids(data)) == 4
    finally:
        rc = run.ctrl_c()
    assert rc == 0, run.text()[-2000:]
    assert hoardd_pids(data) == [], "Ctrl-C left nodes running"
    # again: same cluster, same credentials, same objects
    run = Run(tmp, port)
    try:
        run.wait_banner()
        assert read_creds(os.path.join(data, "credentials")) == creds
        out = subprocess.run([AWS, "--endpoint-url", ep, "s3", "cp", "s3://demo/file.bin", "-"],
                             env=env, capture_output=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout == body
    finally:
        assert run.ctrl_c() == 0
    assert hoardd_pids(data) == []


def test_make_run_stops_on_sigterm_to_make(tmp_path):
    """A supervisor (or `kill PID`) stops `make run` with SIGTERM to make alone: make passes
    it to its recipe, run.sh, which stops the nodes (they run in sessions of their own)."""
    run = Run(str(tmp_path), free_base(4), via_make=True)
    try:
        run.wait_banner()
        assert len(hoardd_pids(run.data)) == 4
    except BaseException:
        run.kill_all()
        raise
    run.stop(signal.SIGTERM, group=False)  # make's own exit code says "Terminated"
    assert "stopped" in run.text(), run.text()[-2000:]


def test_run_sh_stops_on_sighup(tmp_path):
    """A closed terminal (SIGHUP) stops the cluster as Ctrl-C does."""
    run = Run(str(tmp_path), free_base(4))
    try:
        run.wait_banner()
        assert len(hoardd_pids(run.data)) == 4
    except BaseException:
        run.kill_all()
        raise
    assert run.stop(signal.SIGHUP, group=False) == 0
    assert "stopped" in run.text(), run.text()[-2000:]


def test_cluster_sh_up_down_up(tmp_path):
    d = str(tmp_path / "c")
    base = free_base(5)
    cl = os.path.join(REPO, "deploy/local/cluster.sh")
    env = dict(os.environ, HOARD_BUILD=BUILD)

    def up():
        out = subprocess.run(["bash", cl, "up", "--proxies", "2", "--targets", "3",
                              "--mountpaths", "1", "--port", str(base), "--dir", d],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        kv = dict(line.split("=", 1) for line in out.stdout.splitlines()
                  if re.match(r"^(HOARD_ENDPOINT|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY)=",
                              line))
        assert kv["HOARD_ENDPOINT"] == "http://127.0.0.1:%d" % base
        return kv

    def down():
        out = subprocess.run(["bash", cl, "down", "--dir", d], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr

    try:
        kv = up()
        auth = helpers.SigV4Requests(kv["AWS_ACCESS_KEY_ID"], kv["AWS_SECRET_ACCESS_KEY"])
        ep = kv["HOARD_ENDPOINT"]
        assert requests.post(ep + "/v1/buckets/keep", auth=auth, timeout=10).status_code == 201
        r = requests.put(ep + "/v1/objects/keep/a/b.txt", data=b"persisted", auth=auth,
                         timeout=10)
        assert r.status_code == 200, r.text
        # a second `up` while running refuses and changes nothing
        out = subprocess.run(["bash", cl, "up", "--dir", d, "--port", str(base)],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode != 0 and "already running" in out.stderr
        down()
        assert hoardd_pids(d) == []
        with pytest.raises(requests.ConnectionError):
            requests.get(ep + "/v1/health", timeout=2)
        kv2 = up()
        assert kv2 == kv  # same generated keys
        r = requests.get(kv2["HOARD_ENDPOINT"] + "/v1/objects/keep/a/b.txt", auth=auth,
                         timeout=10)
        assert r.status_code == 200 and r.content == b"persisted"
        # bad arguments: a clear message and exit 2
        out = subprocess.run(["bash", cl, "up", "--targets", "x"], capture_output=True,
                             text=True, timeout=10)
        assert out.returncode == 2 and "not a number" in out.stderr
    finally:
        down()
        assert hoardd_pids(d) == []
        time.sleep(0.1)


def test_cluster_sh_up_tls(tmp_path):
    """cluster.sh up --mtls: a throwaway CA and node certificates, every node on https with
    client certificates on node calls; the aws CLI with the printed AWS_CA_BUNDLE and curl -L
    through the 307 work, and plain http gets no answer."""
    d = str(tmp_path / "c")
    base = free_base(3)
    cl = os.path.join(REPO, "deploy/local/cluster.sh")
    try:
        out = subprocess.run(["bash", cl, "up", "--mtls", "--proxies", "1", "--targets", "2",
                              "--mountpaths", "1", "--port", str(base), "--dir", d],
                             capture_output=True, text=True, env=dict(os.environ,
                                                                      HOARD_BUILD=BUILD),
                             timeout=180)
        assert out.returncode == 0, out.stderr
        kv = dict(line.split(" ", 1)[0].split("=", 1) for line in out.stdout.splitlines()
                  if re.match(r"^(HOARD_ENDPOINT|AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|"
                              r"AWS_CA_BUNDLE)=", line))
        ep, ca = kv["HOARD_ENDPOINT"], kv["AWS_CA_BUNDLE"]
        assert ep == "https://127.0.0.1:%d" % base and os.path.exists(ca)
        for n in ("p1", "t1", "t2"):
            assert os.path.exists(os.path.join(d, "tls", n + ".pem"))
        auth = helpers.SigV4Requests(kv["AWS_ACCESS_KEY_ID"], kv["AWS_SECRET_ACCESS_KEY"])
        r = requests.get(ep + "/v1/cluster", auth=auth, timeout=10, verify=ca)
        assert r.status_code == 200, r.text
        urls = [n["public_net"]["direct_url"] for n in r.json()["tmap"].values()]
        assert len(urls) == 2 and all(u.startswith("https://") for u in urls), urls
        if os.access(AWS, os.X_OK):
            env = env_for({k: v for k, v in kv.items() if k.startswith("AWS_")})
            src = tmp_path / "f.bin"
            src.write_bytes(b"tls" * 1000)
            for cmd in (["s3", "mb", "s3://tlsdemo"], ["s3", "cp", str(src), "s3://tlsdemo/f"]):
                p = subprocess.run([AWS, "--endpoint-url", ep] + cmd, env=env,
                                   capture_output=True, timeout=120)
                assert p.returncode == 0, p.stderr
            h = helpers.sign_headers("GET", ep + "/v1/objects/tlsdemo/f",
                                     kv["AWS_ACCESS_KEY_ID"], kv["AWS_SECRET_ACCESS_KEY"])
            cmd = ["curl", "-sSfL", "--cacert", ca, ep + "/v1/objects/tlsdemo/f"]
            for k, v in h.items():
                cmd += ["-H", "%s: %s" % (k, v)]
            p = subprocess.run(cmd, capture_output=True, timeout=60)
            assert p.returncode == 0 and p.stdout == b"tls" * 1000, p.stderr
        with pytest.raises(requests.ConnectionError):
            requests.get("http://127.0.0.1:%d/v1/health" % base, timeout=10)
    finally:
        subprocess.run(["bash", cl, "down", "--dir", d], capture_output=True, timeout=60)
        assert hoardd_pids(d) == []
