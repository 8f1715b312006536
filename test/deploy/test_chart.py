"""Offline checks of the Helm chart deploy/helm/hoard: helm lint --strict, helm template with
the default values and every value set in deploy/helm/hoard/ci/ (plus the multi-host test's),
every rendered object validated against the Kubernetes schemas (validate_k8s.mjs), yamllint,
values.schema.json refusing bad values, the rendered hoard.conf accepted by hoardd, the chart
doing what docs/operations.md says, and the values reference in docs/operations.md naming
every value.
"""
import glob
import json
import os
import re
import subprocess

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOOLS = os.path.join(REPO, ".deploy-tools")
HELM = os.path.join(TOOLS, "bin", "helm")
CHART = os.path.join(REPO, "deploy", "helm", "hoard")
YAMLLINT_CFG = os.path.join(REPO, "deploy", "helm", "yamllint.yaml")
HOARDD = os.path.join(REPO, os.environ.get("HOARD_BUILD", "build"), "bin", "hoardd")
VALUE_SETS = [None] + sorted(glob.glob(os.path.join(CHART, "ci", "*-values.yaml"))) + [
    os.path.join(HERE, "multihost-values.yaml")]


def ids(v):
    return "default" if v is None else os.path.basename(v).replace("-values.yaml", "")


def run(*cmd, check=True):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr)
    return r


def template(values=None, *sets, check=True):
    cmd = [HELM, "template", "rel", CHART, "--namespace", "ns"]
    if values:
        cmd += ["-f", values]
    for s in sets:
        cmd += ["--set", s]
    return run(*cmd, check=check)


def objects(values=None, *sets):
    return [d for d in yaml.safe_load_all(template(values, *sets).stdout) if d]


def find(objs, kind, name):
    for o in objs:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    raise AssertionError("%s/%s not rendered: %s" % (
        kind, name, [(o["kind"], o["metadata"]["name"]) for o in objs]))


def env_of(workload):
    return {e["name"]: e.get("value", e.get("valueFrom"))
            for e in workload["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_tools_present():
    assert os.access(HELM, os.X_OK), "helm missing: run deploy/local/install-deps.sh"
    assert run(HELM, "version", "--short").stdout.startswith("v4."), "helm v4 expected"
    assert run("yamllint", "--version").returncode == 0


@pytest.mark.parametrize("values", VALUE_SETS, ids=ids)
def test_lint_strict(values):
    cmd = [HELM, "lint", "--strict", CHART] + (["-f", values] if values else [])
    r = run(*cmd)
    assert "0 chart(s) failed" in r.stdout, r.stdout


@pytest.mark.parametrize("values", VALUE_SETS, ids=ids)
def test_rendered_objects_valid(values, tmp_path):
    out = tmp_path / "rendered.yaml"
    out.write_text(template(values).stdout)
    r = run("node", os.path.join(HERE, "validate_k8s.mjs"), str(out), check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 invalid" in r.stdout
    r = run("yamllint", "-s", "-c", YAMLLINT_CFG, str(out), check=False)
    assert r.returncode == 0, r.stdout


def test_validator_rejects_bad_objects(tmp_path):
    """The validator is not a rubber stamp: wrong types, bad enums and unknown fields fail."""
    cases = {
        "type": "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"
                "spec: {ports: [{port: eighty}]}\n",
        "enum": "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {type: Bogus}\n",
        "unknown": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\n"
                   "spec:\n  serviceName: a\n  selector: {}\n  template:\n    spec:\n"
                   "      containers: [{name: c, image: i, readinesProbe: {}}]\n",
        "required": "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {}\n"
                    "spec: {maxUnavailable: true}\n",
        "kind": "apiVersion: v1\nkind: Nonsense\nmetadata: {name: a}\n",
    }
    for name, text in cases.items():
        f = tmp_path / (name + ".yaml")
        f.write_text(text)
        r = run("node", os.path.join(HERE, "validate_k8s.mjs"), str(f), check=False)
        assert r.returncode == 1 and "INVALID" in r.stdout, (name, r.stdout)


def test_values_files_yamllint():
    files = [os.path.join(CHART, "values.yaml"), os.path.join(CHART, "Chart.yaml")] + [
        v for v in VALUE_SETS if v]
    r = run("yamllint", "-s", "-c", YAMLLINT_CFG, *files, check=False)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("sets,why", [
    (["target.expose.mode=service"], "service exposure without publicURL"),
    (["target.expose.mode=nodePort"], "unknown expose mode"),
    (["config.role=proxy"], "a per-pod setting in config"),
    (["config.cluster\\.secret=x"], "a secret in the ConfigMap"),
    (["target.mountpaths[0].name=state", "target.mountpaths[0].size=1Gi"], "volume name clash"),
    (["target.mountpaths[0].name=Disk_1", "target.mountpaths[0].size=1Gi"], "not a DNS label"),
    (["target.replicas=0"], "no targets"),
    (["cluster.heartbeatMs=10"], "below hoardd's range"),
    (["proxy.service.type=External"], "unknown Service type"),
    (["auth.keys[0].accessKey=a:b", "auth.keys[0].secretKey=s"], "':' in a key"),
    (["target.antiAffinity=always"], "unknown anti-affinity"),
    (["tagret.replicas=3"], "misspelt top-level key"),
    (["target.prestop.timeoutSeconds=0"], "a preStop wait of nothing"),
    (["target.prestop.wait=1"], "misspelt prestop key"),
])
def test_schema_refuses(sets, why):
    r = template(None, *sets, check=False)
    assert r.returncode != 0, "accepted %s (%s)" % (sets, why)
    assert "schema" in r.stderr, r.stderr


@pytest.mark.parametrize("values", VALUE_SETS, ids=ids)
def test_hoard_conf_accepted_by_hoardd(values, tmp_path):
    """The ConfigMap's hoard.conf has only settings hoardd knows, with valid values."""
    cm = find(objects(values), "ConfigMap", "rel-hoard-config")
    conf = tmp_path / "hoard.conf"
    conf.write_text(cm["data"]["hoard.conf"])
    r = run(HOARDD, "--config", str(conf), "--print-config", check=False)
    assert r.returncode == 0, r.stderr
    file_keys = {ln.split()[0] for ln in r.stdout.splitlines() if ln.rstrip().endswith("(file)")}
    conf_keys = {ln.split("=")[0].strip() for ln in conf.read_text().splitlines()
                 if ln.strip() and not ln.startswith("#")}
    assert conf_keys == file_keys, (conf_keys, file_keys)


@pytest.mark.parametrize("values", VALUE_SETS, ids=ids)
def test_env_names_are_hoardd_settings(values):
    """Every HOARD_* variable the chart sets names a hoardd setting (hoardd ignores unknown
    HOARD_* names, so a typo would silently do nothing)."""
    known = set()
    for ln in run(HOARDD, "--print-config").stdout.splitlines():
        known.add("HOARD_" + ln.split()[0].upper().replace(".", "_"))
    known.add("HOARD_CONFIG")
    for o in objects(values):
        if o["kind"] in ("StatefulSet", "Deployment"):
            bad = [k for k in env_of(o) if k.startswith("HOARD_") and k not in known]
            assert not bad, (o["metadata"]["name"], bad)


def test_default_layout():
    objs = objects()
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objs)
    assert ("StatefulSet", "rel-hoard-primary") in kinds
    assert ("Deployment", "rel-hoard-proxy") in kinds
    assert ("StatefulSet", "rel-hoard-target") in kinds
    t = find(objs, "StatefulSet", "rel-hoard-target")
    spec = t["spec"]["template"]["spec"]
    c = spec["containers"][0]
    env = env_of(t)
    assert env["HOARD_ROLE"] == "target"
    assert env["HOARD_NODE_ID"] == "$(POD_NAME)"  # stable ids: placement survives rescheduling
    assert env["HOARD_PUBLIC_URL"] == "http://$(POD_IP):8081"
    assert env["HOARD_CLUSTER_JOIN"] == "http://rel-hoard-primary.ns.svc.cluster.local:8080"
    assert env["HOARD_MOUNTPATHS"] == "/var/lib/hoard/mp0"
    assert env["HOARD_CLUSTER_SECRET"]["secretKeyRef"]["name"] == "rel-hoard-cluster"
    names = [e["name"] for e in c["env"]]
    assert names.index("POD_IP") < names.index("HOARD_PUBLIC_URL")  # $(VAR) needs order
    assert c["livenessProbe"]["httpGet"]["path"] == "/v1/health"
    assert c["readinessProbe"]["httpGet"]["path"] == "/v1/health?ready=true"
    assert c["resources"]["requests"]["memory"]
    vcts = [v["metadata"]["name"] for v in t["spec"]["volumeClaimTemplates"]]
    assert sorted(vcts) == ["mp0", "state"]
    assert t["spec"]["serviceName"] == "rel-hoard-target"
    hl = find(objs, "Service", "rel-hoard-target")
    assert hl["spec"]["clusterIP"] == "None"
    aff = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert aff[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert spec["securityContext"]["runAsNonRoot"] is True
    pdb = find(objs, "PodDisruptionBudget", "rel-hoard-target")
    assert pdb["spec"]["maxUnavailable"] == 1
    ann = t["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and ann["prometheus.io/port"] == "8081"
    svc = find(objs, "Service", "rel-hoard")
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"]["app.kubernetes.io/component"] == "proxy"
    primary = find(objs, "Service", "rel-hoard-primary")
    assert primary["spec"]["selector"]["hoard.io/proxy-role"] == "primary"
    assert "HOARD_CLUSTER_JOIN" not in env_of(find(objs, "StatefulSet", "rel-hoard-primary"))
    assert env_of(find(objs, "Deployment", "rel-hoard-proxy"))["HOARD_CLUSTER_JOIN"] == \
        env["HOARD_CLUSTER_JOIN"]
    conf = find(objs, "ConfigMap", "rel-hoard-config")["data"]["hoard.conf"]
    assert "s3.redirect = false" in conf and "native.redirect = true" in conf
    sec = find(objs, "Secret", "rel-hoard-cluster")
    assert len(sec["data"]["cluster.secret"]) >= 48


def test_prestop_hook():
    """Targets update one at a time by default, each with the preStop hook (hoardd --prestop,
    the image's entrypoint) inside a grace period that covers it; the chart refuses a grace
    period shorter than the hook's wait."""
    t = find(objects(), "StatefulSet", "rel-hoard-target")
    spec = t["spec"]["template"]["spec"]
    assert t["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    cmd = spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    with open(os.path.join(REPO, "deploy", "docker", "Dockerfile")) as f:
        entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", f.read(), re.M).group(1))
    assert cmd == entry + ["--prestop", "--prestop-timeout", "600"], cmd
    assert spec["terminationGracePeriodSeconds"] >= 600 + 15
    t = find(objects(None, "target.prestop.timeoutSeconds=30",
                     "target.terminationGracePeriodSeconds=45"), "StatefulSet", "rel-hoard-target")
    assert t["spec"]["template"]["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"][
        "command"][-1] == "30"
    t = find(objects(None, "target.prestop.enabled=false",
                     "target.terminationGracePeriodSeconds=30"), "StatefulSet", "rel-hoard-target")
    assert "lifecycle" not in t["spec"]["template"]["spec"]["containers"][0]
    r = template(None, "target.terminationGracePeriodSeconds=100", check=False)
    assert r.returncode != 0 and "at least target.prestop.timeoutSeconds + 15" in r.stderr, \
        r.stderr


def test_expose_modes():
    o = objects(None, "target.expose.mode=hostNetwork")
    t = find(o, "StatefulSet", "rel-hoard-target")
    assert t["spec"]["template"]["spec"]["hostNetwork"] is True
    assert t["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert env_of(t)["HOARD_PUBLIC_URL"] == "http://$(HOST_IP):8081"

    o = objects(None, "target.expose.mode=hostPort", "target.expose.hostPort=31001")
    t = find(o, "StatefulSet", "rel-hoard-target")
    assert t["spec"]["template"]["spec"]["containers"][0]["ports"][0]["hostPort"] == 31001
    assert env_of(t)["HOARD_PUBLIC_URL"] == "http://$(HOST_IP):31001"

    url = "http://$(POD_NAME).t.example.com:8081"
    o = objects(None, "target.expose.mode=service", "target.expose.publicURL=" + url,
                "target.replicas=2")
    t = find(o, "StatefulSet", "rel-hoard-target")
    assert env_of(t)["HOARD_PUBLIC_URL"] == url
    for i in range(2):
        s = find(o, "Service", "rel-hoard-target-%d" % i)
        assert s["spec"]["type"] == "LoadBalancer"
        assert s["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == \
            "rel-hoard-target-%d" % i


def test_relay_and_secrets_values():
    o = objects(os.path.join(CHART, "ci", "hostnetwork-values.yaml"))
    conf = find(o, "ConfigMap", "rel-hoard-config")["data"]["hoard.conf"]
    assert "native.redirect = false" in conf and "s3.redirect = false" in conf
    assert "http.max_conns = 16384" in conf
    t = find(o, "StatefulSet", "rel-hoard-target")
    env = env_of(t)
    assert env["HOARD_AUTH_KEYS"]["secretKeyRef"]["name"] == "rel-hoard-auth"
    assert env["AWS_SHARED_CREDENTIALS_FILE"] == "/etc/hoard/aws/credentials"
    up = find(o, "Secret", "rel-hoard-upstream")["stringData"]
    assert "[minio]" in up["credentials"] and "[profile minio]" in up["config"]
    assert "endpoint_url = http://minio.storage.svc:9000" in up["config"]
    aff = t["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in aff
    assert t["spec"]["updateStrategy"]["type"] == "OnDelete"
    assert not [x for x in o if x["kind"] == "Deployment"]  # proxy.replicas: 0
    sm = find(o, "ServiceMonitor", "rel-hoard")
    assert sm["spec"]["selector"]["matchLabels"]["hoard.io/metrics"] == "true"
    o = objects(os.path.join(CHART, "ci", "service-values.yaml"))
    assert not [x for x in o if x["kind"] == "Secret"]  # all existingSecret
    env = env_of(find(o, "StatefulSet", "rel-hoard-target"))
    assert env["HOARD_AUTH_KEYS"]["secretKeyRef"] == {"name": "hoard-keys", "key": "auth.keys"}


def test_config_change_restarts_pods():
    a = find(objects(), "StatefulSet", "rel-hoard-target")
    b = find(objects(None, "log.level=debug"), "StatefulSet", "rel-hoard-target")
    ka = a["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    kb = b["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert ka != kb


PASSTHROUGH = {"resources", "podSecurityContext", "securityContext"}  # Kubernetes objects as is


def _value_paths(d, prefix=""):
    for k, v in d.items():
        p = prefix + k
        if isinstance(v, dict) and v and k not in PASSTHROUGH:
            yield from _value_paths(v, p + ".")
        else:
            yield p


def test_operations_guide_names_every_value():
    with open(os.path.join(CHART, "values.yaml")) as f:
        values = yaml.safe_load(f)
    with open(os.path.join(REPO, "docs", "operations.md")) as f:
        doc = f.read()
    missing = [p for p in _value_paths(values) if "`%s`" % p not in doc]
    assert not missing, "docs/operations.md values reference lacks: %s" % missing
    documented = set(re.findall(r"^\| `([a-zA-Z0-9_.]+)` \|", doc, re.M))
    stale = [p for p in documented if "." in p and p.split(".")[0] in values and
             p not in set(_value_paths(values)) and not any(
                 q.startswith(p + ".") for q in _value_paths(values))]
    assert not stale, "docs/operations.md documents values the chart lacks: %s" % stale



@pytest.mark.parametrize("role", ["target", "proxy"])
def test_operations_guide_names_every_metric(role, tmp_path):
    """Every metric a node exports (its # HELP lines) has a row in docs/operations.md."""
    import socket
    import time

    import requests
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([HOARDD, "--role", role, "--listen", "127.0.0.1:%d" % port,
                          "--data", str(tmp_path), "--log.level", "warn"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = None
        for _ in range(100):
            try:
                text = requests.get("http://127.0.0.1:%d/metrics" % port, timeout=2).text
                break
            except requests.RequestException:
                time.sleep(0.1)
        assert text, "no /metrics from hoardd --role " + role
    finally:
        p.terminate()
        p.wait(10)
    names = re.findall(r"^# HELP (\S+)", text, re.M)
    assert names
    with open(os.path.join(REPO, "docs", "operations.md")) as f:
        doc = f.read()
    missing = [n for n in names if n not in doc]
    assert not missing, "docs/operations.md Metrics lacks: %s" % missing


def test_tls(tmp_path):
    """tls.enabled: https URLs and probes, the Secret mounted and named in hoard.conf; with
    cert-manager a Certificate whose names cover what nodes and clients connect to."""
    objs = objects(None, "tls.enabled=true", "tls.existingSecret=mine", "tls.clientAuth=true")
    conf = find(objs, "ConfigMap", "rel-hoard-config")["data"]["hoard.conf"]
    for line in ("tls.cert = /etc/hoard/tls/tls.crt", "tls.key = /etc/hoard/tls/tls.key",
                 "tls.ca = /etc/hoard/tls/ca.crt", "tls.client_auth = true",
                 "tls.verify_host = false"):
        assert line in conf, conf
    t = find(objs, "StatefulSet", "rel-hoard-target")
    p = find(objs, "StatefulSet", "rel-hoard-primary")
    g = find(objs, "Deployment", "rel-hoard-proxy")
    assert env_of(t)["HOARD_PUBLIC_URL"] == \
        "https://$(POD_NAME).rel-hoard-target.ns.svc.cluster.local:8081"
    assert env_of(t)["HOARD_CLUSTER_JOIN"] == "https://rel-hoard-primary.ns.svc.cluster.local:8080"
    assert env_of(p)["HOARD_PUBLIC_URL"] == \
        "https://$(POD_NAME).rel-hoard-primary.ns.svc.cluster.local:8080"
    assert env_of(g)["HOARD_PUBLIC_URL"] == "https://$(POD_IP):8080"
    for w in (t, p, g):
        spec = w["spec"]["template"]["spec"]
        c = spec["containers"][0]
        assert all(c[k]["httpGet"]["scheme"] == "HTTPS"
                   for k in ("startupProbe", "livenessProbe", "readinessProbe"))
        assert {"name": "tls", "mountPath": "/etc/hoard/tls", "readOnly": True} in \
            c["volumeMounts"]
        vol = [v for v in spec["volumes"] if v["name"] == "tls"]
        assert vol and vol[0]["secret"]["secretName"] == "mine"
    assert not [o for o in objs if o["kind"] == "Certificate"]
    # without TLS nothing of it is rendered
    plain = objects()
    assert "tls." not in find(plain, "ConfigMap", "rel-hoard-config")["data"]["hoard.conf"]
    assert env_of(find(plain, "StatefulSet", "rel-hoard-target"))["HOARD_PUBLIC_URL"] == \
        "http://$(POD_IP):8081"
    # no certificate source: refused
    r = template(None, "tls.enabled=true", check=False)
    assert r.returncode != 0 and "tls.existingSecret or tls.certManager.enabled" in r.stderr
    r = template(None, "tls.enabled=true", "tls.certManager.enabled=true", check=False)
    assert r.returncode != 0 and "issuerRef.name is required" in r.stderr
    # cert-manager
    objs = objects(None, "tls.enabled=true", "tls.certManager.enabled=true",
                   "tls.certManager.issuerRef.name=hoard-ca",
                   "tls.certManager.issuerRef.kind=ClusterIssuer",
                   "tls.certManager.dnsNames={s3.example.com}")
    cert = find(objs, "Certificate", "rel-hoard")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    spec = cert["spec"]
    assert spec["secretName"] == "rel-hoard-tls"
    assert spec["issuerRef"] == {"name": "hoard-ca", "kind": "ClusterIssuer",
                                 "group": "cert-manager.io"}
    assert {"server auth", "client auth"} <= set(spec["usages"])
    d = "ns.svc.cluster.local"
    for name in ("rel-hoard." + d, "rel-hoard-primary." + d, "*.rel-hoard-primary." + d,
                 "*.rel-hoard-target." + d, "s3.example.com"):
        assert name in spec["dnsNames"], spec["dnsNames"]
    t = find(objs, "StatefulSet", "rel-hoard-target")
    vol = [v for v in t["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    assert vol[0]["secret"]["secretName"] == "rel-hoard-tls"
    # every other object passes the Kubernetes schemas (Certificate is a CRD they lack)
    out = tmp_path / "rendered.yaml"
    out.write_text(yaml.safe_dump_all([o for o in objs if o["kind"] != "Certificate"]))
    r = run("node", os.path.join(HERE, "validate_k8s.mjs"), str(out), check=False)
    assert r.returncode == 0, r.stdout + r.stderr
