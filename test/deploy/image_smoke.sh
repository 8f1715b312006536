#!/usr/bin/env bash
# Smoke test of the container image: 1 proxy + 2 targets from hoard:latest with host
# networking on 127.0.0.1, configured only through HOARD_* environment variables, driven with
# the aws CLI (S3, relayed by the proxy) and curl -L (native API, 307 to a target).
#   test/deploy/image_smoke.sh [IMAGE]      (make test-image builds the image first)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=deploy/docker/lib.sh
. "$repo/deploy/docker/lib.sh"
image="${1:-hoard:latest}"
names=(hoard-smoke-p1 hoard-smoke-t1 hoard-smoke-t2)
tmp="$(mktemp -d /tmp/hoard-image-smoke.XXXXXX)"
fails=0 passes=0

cleanup() {
    local rc=$?
    if hd_docker_up; then
        if [ $rc -ne 0 ] || [ $fails -ne 0 ]; then
            for n in "${names[@]}"; do
                echo "--- logs of $n" >&2
                "${DOCKER[@]}" logs --tail 20 "$n" >&2 2>&1 || true
            done
        fi
        "${DOCKER[@]}" rm -f "${names[@]}" >/dev/null 2>&1 || true
    fi
    hd_dockerd_stop
    rm -rf "$tmp"
}
trap cleanup EXIT

ok() { echo "  ok: $*"; passes=$((passes + 1)); }
bad() { echo "  FAIL: $*"; fails=$((fails + 1)); }
check() { # description command...
    local what="$1"
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}

[ "$(id -u)" -eq 0 ] || hd_die "needs root (dockerd)"
hd_lock
hd_dockerd_start
"${DOCKER[@]}" image inspect "$image" >/dev/null 2>&1 ||
    hd_die "image $image not found in the private daemon: run deploy/docker/build.sh (make image)"

free_ports() { /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}
read -r pp tp1 tp2 < <(free_ports 3)
ak="SMOKE$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
sk="$(head -c 30 /dev/urandom | base64 | tr -d '/+=' | head -c 40)"
secret="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
proxy="http://127.0.0.1:$pp"

echo "image: $image"
user="$("${DOCKER[@]}" image inspect -f '{{.Config.User}}' "$image")"
entry="$("${DOCKER[@]}" image inspect -f '{{join .Config.Entrypoint " "}}' "$image")"
check "runs as non-root user ($user)" test "$user" = "10001:10001"
check "entrypoint is hoardd ($entry)" test "$entry" = "/usr/local/bin/hoardd"
tools="$("${DOCKER[@]}" run --rm --network none --entrypoint /bin/sh "$image" -c \
    'for t in gcc cc make pkg-config; do command -v $t; done; ls /usr/include 2>/dev/null | head -1' || true)"
check "no compiler, make or headers in the image" test -z "$tools"
role="$("${DOCKER[@]}" run --rm --network none -e HOARD_ROLE=proxy "$image" --print-config |
    awk '$1 == "role" {print $3, $NF}')"
check "role comes from the environment ($role)" test "$role" = "proxy (env)"

start() { # name role port [extra docker args...]
    local name="$1" role="$2" port="$3"
    shift 3
    mkdir -p "$tmp/$name"
    chown 10001:10001 "$tmp/$name"
    "${DOCKER[@]}" run -d --name "$name" --network host --user 10001:10001 \
        -v "$tmp/$name:/var/lib/hoard" \
        -e HOARD_ROLE="$role" -e HOARD_LISTEN="127.0.0.1:$port" \
        -e HOARD_PUBLIC_URL="http://127.0.0.1:$port" -e HOARD_CLUSTER_SECRET="$secret" \
        -e HOARD_AUTH_KEYS="$ak:$sk" -e HOARD_LOG_ACCESS=- "$@" "$image" >/dev/null
}
wait_ready() { # url name
    local i
    for i in $(seq 1 200); do
        curl -sf -o /dev/null "$1/v1/health?ready=true" && return 0
        sleep 0.1
    done
    echo "$2 not ready at $1" >&2
    return 1
}
start hoard-smoke-p1 proxy "$pp" -e HOARD_NODE_ID=smoke-p1
wait_ready "$proxy" p1
for t in 1 2; do
    port=$([ $t = 1 ] && echo "$tp1" || echo "$tp2")
    start "hoard-smoke-t$t" target "$port" -e HOARD_CLUSTER_JOIN="$proxy" \
        -e HOARD_NODE_ID="smoke-t$t" -e HOARD_DATA=/var/lib/hoard/state \
        -e HOARD_MOUNTPATHS=/var/lib/hoard/mp1,/var/lib/hoard/mp2
done
wait_ready "http://127.0.0.1:$tp1" t1
wait_ready "http://127.0.0.1:$tp2" t2
ntargets="$(curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user "$ak:$sk" "$proxy/v1/cluster" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["tmap"]))')"
check "cluster map has 2 targets ($ntargets)" test "$ntargets" = 2

aws_bin="$(command -v /usr/bin/aws || command -v aws)"
awsc() {
    AWS_ACCESS_KEY_ID="$ak" AWS_SECRET_ACCESS_KEY="$sk" AWS_DEFAULT_REGION=us-east-1 \
        AWS_CONFIG_FILE="$tmp/none" AWS_SHARED_CREDENTIALS_FILE="$tmp/none" \
        "$aws_bin" --endpoint-url "$proxy" "$@"
}
quiet() { "$@" >/dev/null; }
head -c 3000000 /dev/urandom >"$tmp/big.bin"
mkdir -p "$tmp/small"
for i in $(seq 1 24); do head -c $((i * 1000)) /dev/urandom >"$tmp/small/obj-$i"; done
check "aws s3 mb" quiet awsc s3 mb s3://smoke
check "aws s3 cp (3 MB, relayed)" awsc s3 cp "$tmp/big.bin" s3://smoke/big.bin --only-show-errors
check "aws s3 cp --recursive (24 objects)" awsc s3 cp --recursive "$tmp/small" s3://smoke/small --only-show-errors
n="$(awsc s3 ls s3://smoke/small/ | wc -l || true)"
check "aws s3 ls lists 24 objects ($n)" test "$n" = 24
awsc s3 cp s3://smoke/big.bin "$tmp/big.back" --only-show-errors || true
check "aws s3 cp back is byte-identical" cmp -s "$tmp/big.bin" "$tmp/big.back"

curls=(curl -s --aws-sigv4 aws:amz:us-east-1:s3 --user "$ak:$sk" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
loc="$("${curls[@]}" -o /dev/null -w '%{redirect_url}' "$proxy/v1/objects/smoke/big.bin")"
case "$loc" in
"http://127.0.0.1:$tp1/"* | "http://127.0.0.1:$tp2/"*) ok "proxy answers 307 to a target (${loc%%\?*})" ;;
*) bad "proxy redirect '$loc' is not a target URL" ;;
esac
"${curls[@]}" -L -o "$tmp/big.curl" "$proxy/v1/objects/smoke/big.bin" || true
check "curl -L through the redirect is byte-identical" cmp -s "$tmp/big.bin" "$tmp/big.curl"
"${curls[@]}" -L -o "$tmp/o7" "$proxy/v1/objects/smoke/small/obj-7" || true
check "curl -L small object" cmp -s "$tmp/small/obj-7" "$tmp/o7"

puts() { curl -sf "$1/metrics" | awk '/^hoard_requests_total\{op="put",status="200"\}/ {print $2}'; }
p1="$(puts "http://127.0.0.1:$tp1")" p2="$(puts "http://127.0.0.1:$tp2")"
check "both targets stored objects (PUTs: ${p1:-0} and ${p2:-0})" test "${p1:-0}" != 0 -a "${p2:-0}" != 0

for n in "${names[@]}"; do "${DOCKER[@]}" stop -t 20 "$n" >/dev/null; done
codes="$("${DOCKER[@]}" inspect -f '{{.State.ExitCode}}' "${names[@]}" | tr '\n' ' ')"
check "containers stop cleanly on SIGTERM (exit codes $codes)" test "$codes" = "0 0 0 "

echo "image-smoke: $passes passed, $fails failed"
[ $fails -eq 0 ]
