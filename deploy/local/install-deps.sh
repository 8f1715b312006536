#!/usr/bin/env bash
# Installs what hoard needs to build, run and test, skipping what is already present.
# Debian packages via apt-get, npm packages into ./node_modules. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

PKGS=(build-essential pkg-config gcc make clang
      libmicrohttpd-dev libcurl4-openssl-dev libssl-dev libuv1-dev libsqlite3-dev
      libjansson-dev libexpat1-dev libxxhash-dev libarchive-dev
      curl awscli s3cmd rclone python3-boto3 python3-pytest python3-requests python3-xxhash python3-torch
      nginx-light wrk)
# node/npm may come from elsewhere (npm self-upgrades); only ask apt when the command is absent.
command -v node >/dev/null || PKGS+=(nodejs)
command -v npm >/dev/null || PKGS+=(npm)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# s3rver: the independent upstream S3 server used by integration tests.
if [ ! -x node_modules/.bin/s3rver ]; then
    echo "install-deps: installing npm s3rver"
    npm install --no-audit --no-fund --silent s3rver@3.7.1 >/dev/null
fi
echo "install-deps: ok"
