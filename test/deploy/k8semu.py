"""A tiny kubelet for tests: runs the pods that rendered Helm manifests describe, each in its
own network namespace, the way Kubernetes would configure them.

What it takes from the manifests (and nothing else): the container's env (value with $(VAR)
expansion in list order, fieldRef for metadata.name/namespace/labels['...pod-index'],
status.podIP/hostIP, secretKeyRef and configMapKeyRef against the rendered Secrets and
ConfigMaps), volumeMounts (configMap and secret volumes are written out as files, every other
volume, PVCs and emptyDirs, is a directory of the pod's own), the pod's runAsUser/runAsGroup,
the httpGet probes, and the kubelet's stop (the preStop exec hook, SIGTERM, SIGKILL after
terminationGracePeriodSeconds). The image's ENTRYPOINT (hoardd) is the binary under test; a
mount path inside the container becomes the pod's directory on the host, in env values too.

Network: one namespace per pod ("node"), a veth pair to a bridge in a hub namespace where the
test's clients live. Addresses exist only inside these namespaces; nothing is configured in the
namespace the test runs in, and check_isolation() proves with `ip route get` that every
address is reached over the test's own links (no gateway) before any traffic is sent.
Service names (the primary's join address) resolve through /etc/netns/NS/hosts, which
`ip netns exec` bind-mounts over /etc/hosts, as cluster DNS would for a headless Service.
"""
import base64
import ctypes
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

CLONE_NEWNET = 0x40000000
SUBNET = "10.231.77"
HUB_IP = SUBNET + ".1"


def sh(*args, check=True, **kw):
    r = subprocess.run(list(args), capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: rc=%d %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


# ---- manifests ----

class Manifests:
    def __init__(self, text):
        self.objs = [d for d in yaml.safe_load_all(text) if d]

    def get(self, kind, name):
        for o in self.objs:
            if o["kind"] == kind and o["metadata"]["name"] == name:
                return o
        raise KeyError("%s/%s not rendered" % (kind, name))

    def of_kind(self, kind):
        return [o for o in self.objs if o["kind"] == kind]

    def secret_value(self, name, key):
        s = self.get("Secret", name)
        if key in s.get("stringData", {}):
            return s["stringData"][key]
        return base64.b64decode(s["data"][key]).decode()

    def configmap_value(self, name, key):
        return self.get("ConfigMap", name)["data"][key]


_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\$")


def expand(value, env):
    """Kubernetes' $(VAR) expansion: earlier variables only, unknown ones kept, $$ -> $."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR.sub(one, value)


class PodSpec:
    """One pod of a workload: name, index, namespace address, resolved env and files."""

    def __init__(self, manifests, workload, index, namespace, ip, root):
        self.m, self.workload, self.index = manifests, workload, index
        self.name = "%s-%d" % (workload["metadata"]["name"], index)
        self.namespace, self.ip = namespace, ip
        self.root = os.path.join(root, self.name)
        spec = workload["spec"]["template"]["spec"]
        self.pod = spec
        self.container = spec["containers"][0]
        sc = spec.get("securityContext", {})
        self.uid, self.gid = sc.get("runAsUser", 0), sc.get("runAsGroup", sc.get("runAsUser", 0))
        self.labels = dict(workload["spec"]["template"]["metadata"].get("labels", {}))
        self.labels["apps.kubernetes.io/pod-index"] = str(index)
        self.labels["statefulset.kubernetes.io/pod-name"] = self.name
        self.mounts = {}  # container path -> host path
        self._volumes()
        self.env = self._env()

    def _field(self, path):
        if path == "metadata.name":
            return self.name
        if path == "metadata.namespace":
            return self.namespace
        if path in ("status.podIP", "status.hostIP"):
            return self.ip  # each pod has a node of its own here
        m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
        if m:
            return self.labels.get(m.group(1), "")
        raise ValueError("fieldRef %s not emulated" % path)

    def _env(self):
        env = {}
        for e in self.container.get("envFrom", []):
            if "configMapRef" in e:
                env.update(self.m.get("ConfigMap", e["configMapRef"]["name"])["data"])
            elif "secretRef" in e:
                s = self.m.get("Secret", e["secretRef"]["name"])
                env.update({k: base64.b64decode(v).decode() for k, v in s.get("data", {}).items()})
        for e in self.container.get("env", []):
            if "value" in e:
                v = expand(str(e["value"]), env)
            else:
                src = e["valueFrom"]
                if "fieldRef" in src:
                    v = self._field(src["fieldRef"]["fieldPath"])
                elif "secretKeyRef" in src:
                    v = self.m.secret_value(src["secretKeyRef"]["name"], src["secretKeyRef"]["key"])
                elif "configMapKeyRef" in src:
                    r = src["configMapKeyRef"]
                    v = self.m.configmap_value(r["name"], r["key"])
                else:
                    raise ValueError("env source %r not emulated" % src)
            env[e["name"]] = v
        # a path inside the container is the pod's directory on the host
        for k, v in env.items():
            env[k] = ",".join(self.host_path(p) for p in v.split(",")) if "/" in v else v
        return env

    def host_path(self, path):
        for cpath in sorted(self.mounts, key=len, reverse=True):
            if path == cpath or path.startswith(cpath.rstrip("/") + "/"):
                return self.mounts[cpath] + path[len(cpath):]
        return path

    def _volumes(self):
        vols = {v["name"]: v for v in self.pod.get("volumes", [])}
        for vct in self.workload["spec"].get("volumeClaimTemplates", []):
            vols[vct["metadata"]["name"]] = {"name": vct["metadata"]["name"], "pvc": True}
        for vm in self.container.get("volumeMounts", []):
            v = vols[vm["name"]]
            host = os.path.join(self.root, "volumes", vm["name"])
            if "configMap" in v or "secret" in v:
                if "configMap" in v:
                    data = self.m.get("ConfigMap", v["configMap"]["name"])["data"]
                else:
                    s = self.m.get("Secret", v["secret"]["secretName"])
                    data = dict(s.get("stringData", {}))
                    data.update({k: base64.b64decode(x).decode()
                                 for k, x in s.get("data", {}).items()})
                os.makedirs(host, exist_ok=True)
                for k, text in data.items():
                    with open(os.path.join(host, k), "w") as f:
                        f.write(text)
                if vm.get("subPath"):
                    host = os.path.join(host, vm["subPath"])
            else:
                os.makedirs(host, exist_ok=True)
            self.mounts[vm["mountPath"]] = host

    def port(self, name):
        for p in self.container.get("ports", []):
            if p.get("name") == name:
                return p["containerPort"]
        raise KeyError(name)

    def probe_url(self, kind):
        g = self.container[kind]["httpGet"]
        port = g["port"] if isinstance(g["port"], int) else self.port(g["port"])
        return "http://%s:%d%s" % (self.ip, port, g["path"])

    @property
    def url(self):
        return "http://%s:%d" % (self.ip, self.port("http"))


# ---- network namespaces ----

def _setns(name):
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + name)
    finally:
        os.close(fd)


class Network:
    """A hub namespace with a bridge (the clients' host, HUB_IP) and one namespace per node."""

    def __init__(self, tag):
        self.tag = tag
        self.hub = "%s-hub" % tag
        self.nodes = {}  # short name -> (netns, ip)
        self.created = []
        self.pool = None

    def can_run():
        """None when network namespaces can be made here, else why not."""
        if os.geteuid() != 0:
            return "not root"
        probe = "hoardprobe%d" % os.getpid()
        r = sh("ip", "netns", "add", probe, check=False)
        if r.returncode != 0:
            return "ip netns add failed (%s)" % r.stderr.strip()
        r = sh("ip", "-n", probe, "link", "add", "vp0", "type", "veth", "peer", "name", "vp1",
               check=False)
        sh("ip", "netns", "del", probe, check=False)
        if r.returncode != 0:
            return "cannot create veth pairs (%s)" % r.stderr.strip()
        return None
    can_run = staticmethod(can_run)

    def _ns(self, name):
        sh("ip", "netns", "add", name)
        self.created.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def up(self, names):
        self._ns(self.hub)
        sh("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.hub, "addr", "add", HUB_IP + "/24", "dev", "br0")
        sh("ip", "-n", self.hub, "link", "set", "br0", "up")
        for i, short in enumerate(names):
            ns, ip, port = "%s-%s" % (self.tag, short), "%s.%d" % (SUBNET, 10 + i), "v%d" % i
            self._ns(ns)
            sh("ip", "-n", self.hub, "link", "add", port, "mtu", "65535", "type", "veth",
               "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.hub, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "mtu", "65535", "up")
            sh("ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0")
            self.nodes[short] = (ns, ip, port)
        self.pool = ThreadPoolExecutor(16, initializer=_setns, initargs=(self.hub,))

    def hosts(self, entries):
        """/etc/hosts of every namespace: localhost plus {name: ip} (cluster DNS)."""
        for ns in self.created:
            d = "/etc/netns/" + ns
            os.makedirs(d, exist_ok=True)
            with open(d + "/hosts", "w") as f:
                f.write("127.0.0.1 localhost\n::1 localhost\n")
                for name, ip in entries.items():
                    f.write("%s %s\n" % (ip, name))

    def check_isolation(self):
        """Every address is reached over our own links, and only inside our namespaces."""
        addrs = [HUB_IP] + [ip for _, ip, _ in self.nodes.values()]
        problems = []
        root = sh("ip", "-o", "addr").stdout
        for a in addrs:
            if re.search(r"inet %s/" % re.escape(a), root):
                problems.append("%s is configured in the test's own namespace" % a)
        for ns in self.created:
            if sh("ip", "-n", ns, "route", "show", "default").stdout.strip():
                problems.append("%s has a default route" % ns)
            for a in addrs:
                out = sh("ip", "-n", ns, "route", "get", a).stdout
                first = out.splitlines()[0] if out else ""
                if " via " in first or not re.search(r"dev (lo|eth0|br0) ", first):
                    problems.append("%s: route to %s leaves our links: %s" % (ns, a, first))
        return problems

    def call(self, fn, *args):
        """Runs fn in a thread that lives in the hub namespace (the clients' host)."""
        return self.pool.submit(fn, *args).result()

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def run(self, *cmd, timeout=120, input=None):
        """A client command (curl, aws) in the hub namespace."""
        return subprocess.run(["ip", "netns", "exec", self.hub] + list(cmd), capture_output=True,
                              timeout=timeout, input=input)

    def link(self, short, up):
        """Plugs or unplugs a node's cable (its end on the bridge)."""
        sh("ip", "-n", self.hub, "link", "set", self.nodes[short][2], "up" if up else "down")

    def down(self):
        if self.pool:
            self.pool.shutdown(wait=False, cancel_futures=True)
        for ns in reversed(self.created):
            sh("ip", "netns", "del", ns, check=False)
            shutil.rmtree("/etc/netns/" + ns, ignore_errors=True)
        self.created = []


# ---- running pods ----

class Pod:
    def __init__(self, spec, netns, binary, logdir):
        self.spec, self.netns, self.binary = spec, netns, binary
        self.log = os.path.join(logdir, spec.name + ".log")
        self.proc = None

    def _exec(self, argv):
        """argv as the container runs it: in the pod's namespace, as its user, with only its
        environment; the image's hoardd is the binary under test."""
        s = self.spec
        if os.path.basename(argv[0]) != "hoardd":
            raise ValueError("command %r not emulated (the image's binary is hoardd)" % argv)
        env = ["%s=%s" % kv for kv in sorted(s.env.items())]
        return ["ip", "netns", "exec", self.netns, "setpriv", "--reuid=%d" % s.uid,
                "--regid=%d" % s.gid, "--clear-groups", "env", "-i"] + env + [self.binary] + \
            list(argv[1:])

    def start(self):
        s = self.spec
        for host in s.mounts.values():
            if os.path.isdir(host):
                os.chown(host, s.uid, s.gid)
                for dirpath, dirs, files in os.walk(host):
                    for n in dirs + files:
                        os.chown(os.path.join(dirpath, n), s.uid, s.gid)
        os.chown(s.root, s.uid, s.gid)
        cmd = self._exec(["hoardd"])
        with open(self.log, "ab") as out:
            out.write(b"==== start %s\n" % time.strftime("%H:%M:%S").encode())
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         cwd=s.root)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace=20):
        """SIGTERM, then SIGKILL after the grace period (as the kubelet does)."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed"

    def terminate(self):
        """The kubelet's stop of a pod: the container's preStop hook (exec, as the container
        runs: namespace, user, environment), then SIGTERM, then SIGKILL when
        terminationGracePeriodSeconds, which counts the hook too, has run out (with the
        kubelet's 2 s more when the hook used it all). Returns (hook, exit code): hook is None
        without one, else (exit status or "timeout", its output)."""
        grace = self.spec.pod.get("terminationGracePeriodSeconds", 30)
        hook, t0 = None, time.monotonic()
        pre = self.spec.container.get("lifecycle", {}).get("preStop")
        if pre and self.alive():
            cmd = self._exec(pre["exec"]["command"])
            with open(self.log, "ab") as out:
                out.write(b"==== preStop %s\n" % time.strftime("%H:%M:%S").encode())
            try:
                r = subprocess.run(cmd, capture_output=True, timeout=grace, cwd=self.spec.root,
                                   stdin=subprocess.DEVNULL)
                hook = (r.returncode, (r.stdout + r.stderr).decode(errors="replace"))
            except subprocess.TimeoutExpired as e:
                hook = ("timeout", ((e.stdout or b"") + (e.stderr or b"")).decode(
                    errors="replace"))
            with open(self.log, "ab") as out:
                out.write(("==== preStop ended: %r\n" % (hook,)).encode())
        left = max(grace - (time.monotonic() - t0), 2)
        return hook, self.stop(left)

    def tail(self, n=30):
        try:
            with open(self.log, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def print_config(self):
        """hoardd --print-config with the pod's environment, in its namespace."""
        return sh(*self._exec(["hoardd", "--print-config"]), cwd=self.spec.root).stdout


def wait_for(pred, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s (last: %r)" % (timeout, what, last))


class Loader(threading.Thread):
    """Background client traffic in the hub namespace: fn(i) called in a loop until stop();
    records every failure (an exception or a falsy result) with its time."""

    def __init__(self, net, fn):
        super().__init__(daemon=True)
        self.net, self.fn = net, fn
        self.ok, self.failures = 0, []
        self._stop_ev = threading.Event()

    def run(self):
        _setns(self.net.hub)
        i = 0
        while not self._stop_ev.is_set():
            try:
                r = self.fn(i)
                if r is True:
                    self.ok += 1
                else:
                    self.failures.append((time.strftime("%H:%M:%S"), repr(r)))
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                self.failures.append((time.strftime("%H:%M:%S"), repr(e)))
            i += 1
            time.sleep(0.01)

    def stop(self):
        self._stop_ev.set()
        self.join(30)
