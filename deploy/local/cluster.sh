#!/usr/bin/env bash
# A hoard cluster on loopback, in the background:
#   deploy/local/cluster.sh up [--proxies N] [--targets N] [--mountpaths N] [--port BASE] [--dir DIR]
#                              [--tls] [--mtls]
#   deploy/local/cluster.sh down [--dir DIR]
# Proxies listen on BASE, BASE+1, ...; targets on the ports after them. The first proxy is the
# primary. S3 keys and the cluster secret are generated on the first start and kept in DIR
# (credentials, secret); node state and logs live under DIR too, so `up` after `down` brings
# the same cluster back. --tls: https everywhere, with a throwaway CA and node certificates
# made by openssl in DIR/tls (ca.pem is the one clients need); --mtls: --tls plus client
# certificates on node calls (tls.client_auth). Needs curl (and openssl for --tls).
set -euo pipefail

usage() {
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
proxies=1 targets=3 mps=2 base=8080 dir=".hoard/cluster" tls=0 mtls=0
while [ $# -gt 0 ]; do
    case "$1" in
    --proxies) proxies="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --mountpaths) mps="$2"; shift 2 ;;
    --port) base="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    --mtls) tls=1 mtls=1; shift ;;
    -h | --help) usage ;;
    *) echo "cluster.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
for n in "$proxies" "$targets" "$mps" "$base"; do
    case "$n" in '' | *[!0-9]*) echo "cluster.sh: '$n' is not a number" >&2; exit 2 ;; esac
done
[ "$proxies" -ge 1 ] && [ "$targets" -ge 1 ] && [ "$mps" -ge 1 ] || {
    echo "cluster.sh: need at least one proxy, one target and one mountpath" >&2
    exit 2
}

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$repo/${HOARD_BUILD:-build}/bin/hoardd"

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

down() {
    local f pid i
    shopt -s nullglob
    for f in "$dir"/pids/*.pid; do
        pid="$(cat "$f")"
        kill -TERM "$pid" 2>/dev/null || true
    done
    for f in "$dir"/pids/*.pid; do
        pid="$(cat "$f")"
        for i in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "cluster.sh: $(basename "$f" .pid) (pid $pid) did not stop; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
}

wait_ready() { # url name logfile
    local i
    for i in $(seq 1 300); do
        if curl -sf "${cacert[@]}" -o /dev/null "$1/v1/health?ready=true"; then
            return 0
        fi
        if ! alive "$dir/pids/$2.pid"; then
            echo "cluster.sh: $2 exited; last log lines:" >&2
            tail -n 20 "$3" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "cluster.sh: $2 not ready after 30s; see $3" >&2
    return 1
}

start() { # name role port [args...]
    local name="$1" role="$2" port="$3"
    shift 3
    mkdir -p "$dir/$name" "$dir/logs" "$dir/pids"
    tlsargs=()
    [ "$tls" = 0 ] || tlsargs=(--tls.cert "$dir/tls/$name.pem" --tls.key "$dir/tls/$name.key"
        --tls.ca "$dir/tls/ca.pem" --tls.client_auth "$([ "$mtls" = 1 ] && echo true || echo false)")
    setsid "$bin" --role "$role" --listen "127.0.0.1:$port" --data "$dir/$name" \
        --auth.keys "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" --cluster.secret "$secret" \
        --log.error "$dir/logs/$name.log" "${tlsargs[@]}" "$@" </dev/null >>"$dir/logs/$name.out" 2>&1 &
    echo $! >"$dir/pids/$name.pid"
}

case "$cmd" in
down)
    down
    echo "hoard cluster in $dir stopped"
    exit 0
    ;;
up) ;;
*) usage ;;
esac

[ -x "$bin" ] || { echo "cluster.sh: $bin not built (run make)" >&2; exit 1; }
command -v curl >/dev/null || { echo "cluster.sh: curl is needed" >&2; exit 1; }
shopt -s nullglob
for f in "$dir"/pids/*.pid; do
    if alive "$f"; then
        echo "cluster.sh: a cluster is already running from $dir (cluster.sh down --dir $dir)" >&2
        exit 1
    fi
    rm -f "$f"
done

umask 077
if [ ! -s "$dir/credentials" ]; then
    ak="HOARD$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
    sk="$(head -c 30 /dev/urandom | base64 | tr -d '/+=' | head -c 40)"
    printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$ak" "$sk" >"$dir/credentials"
fi
if [ ! -s "$dir/secret" ]; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/secret"
fi
umask 022
# shellcheck disable=SC1091
. "$dir/credentials"
secret="$(cat "$dir/secret")"
scheme=http cacert=()
if [ "$tls" = 1 ]; then
    names=()
    for i in $(seq 1 "$proxies"); do [ -s "$dir/tls/p$i.pem" ] || names+=("p$i"); done
    for i in $(seq 1 "$targets"); do [ -s "$dir/tls/t$i.pem" ] || names+=("t$i"); done
    [ ${#names[@]} = 0 ] || bash "$repo/deploy/local/mkcerts.sh" "$dir/tls" "${names[@]}"
    scheme=https cacert=(--cacert "$dir/tls/ca.pem")
fi
primary="$scheme://127.0.0.1:$base"

trap 'echo "cluster.sh: start failed; stopping what was started" >&2; down' ERR
start p1 proxy "$base"
wait_ready "$primary" p1 "$dir/logs/p1.log"
for i in $(seq 2 "$proxies"); do
    start "p$i" proxy $((base + i - 1)) --cluster.join "$primary"
done
for i in $(seq 1 "$targets"); do
    m=""
    for j in $(seq 1 "$mps"); do m="$m${m:+,}$dir/t$i/mp$j"; done
    start "t$i" target $((base + proxies + i - 1)) --cluster.join "$primary" --mountpaths "$m"
done
for i in $(seq 2 "$proxies"); do
    wait_ready "$scheme://127.0.0.1:$((base + i - 1))" "p$i" "$dir/logs/p$i.log"
done
for i in $(seq 1 "$targets"); do
    wait_ready "$scheme://127.0.0.1:$((base + proxies + i - 1))" "t$i" "$dir/logs/t$i.log"
done
trap - ERR

cat <<MSG
hoard cluster up: $proxies proxy(ies) from $primary, $targets target(s); state and logs in $dir
  smap:  build/bin/hoard --endpoint $primary cluster show   (or curl --aws-sigv4 with the keys below)
  stop:  $0 down --dir $dir

HOARD_ENDPOINT=$primary
AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
MSG
if [ "$tls" = 1 ]; then
    cat <<MSG
AWS_CA_BUNDLE=$dir/tls/ca.pem   (aws CLI, boto3 and build/bin/hoard read it; curl --cacert)
MSG
fi
