#!/usr/bin/env bash
# `make bench`: warm GET and PUT throughput of one hoard target (load: build/bin/hoard-bench, the
# same client for hoard and nginx), side by side in one run with
# references on this machine (nginx serving the same files; a write+fsync loop on the same
# filesystem). Prints a Markdown table and writes it to $HOARD_BUILD/bench/results.md.
#
# Env: HOARD_BUILD (default build), BENCH_QUICK=1 (~1 minute smoke run),
#      BENCH_REPEATS / BENCH_SECS (override repeats and seconds per measurement),
#      BENCH_ONLY=get|put|shard|cache|coldget|cluster|tls|plan|checkpoint|complete|lifecycle|formats
#      (one part; formats = test/bench/batch_formats.py, batch GET output formats, not in the
#      default run; cache =
#      test/bench/cache.py, the caching tier; coldget = test/bench/coldget.py, cold and warm
#      GETs of an S3-backed bucket vs nginx proxy_cache over the same s3rver; cluster = test/bench/cluster.py, GETs direct vs 307
#      vs S3 relay; tls = test/bench/tls.py, 10 MiB GETs over HTTPS vs nginx with the same
#      certificate and cipher; plan = test/bench/plan.py, epoch plans vs LRU, not in the default
#      run: ~25 minutes; checkpoint = test/bench/checkpoint.py, a 1 GiB checkpoint: write-back vs
#      write-through; complete = test/bench/complete_stall.py, reads during a large
#      CompleteMultipartUpload, not in the default run; lifecycle = test/bench/lifecycle.py,
#      GETs of a bucket with lifecycle rules vs one without, and the cost of a pass, not in the
#      default run),
#      BENCH_HOARDD (another hoardd binary, for A/B runs),
#      BENCH_HOARD_ARGS (extra hoardd options, e.g. "--http.threads 16").
# Never fails on a missed goal: benchmarks are not tests. See docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOP=$PWD
BUILD="${HOARD_BUILD:-build}"
HOARDD="${BENCH_HOARDD:-$TOP/$BUILD/bin/hoardd}"
B="$TOP/$BUILD/bench"
HERE="$TOP/test/bench"
PY=/usr/bin/python3
bench_py() { "$PY" "$HERE/bench.py" "$@"; }

if [ "${BENCH_QUICK:-0}" = 1 ]; then
    REPEATS="${BENCH_REPEATS:-1}"
    SECS="${BENCH_SECS:-2}"
else
    REPEATS="${BENCH_REPEATS:-5}"
    SECS="${BENCH_SECS:-3}"
fi
GET_CONNS=(1 16 64)
GET_SETS=(10k 100k 10m)
declare -A SIZE=([10k]=10240 [100k]=102400 [10m]=10485760)
declare -A PUT_CONNS=([10k]="1 16" [10m]="1 4")
declare -A PUT_SLOTS=([10k]=1000 [10m]=16)

if [ "${BENCH_ONLY:-all}" = cache ]; then
    exec "$PY" "$HERE/cache.py"
fi
if [ "${BENCH_ONLY:-all}" = coldget ]; then # cold/warm GET vs nginx proxy_cache (issue 14)
    exec "$PY" "$HERE/coldget.py"
fi
if [ "${BENCH_ONLY:-all}" = plan ]; then # epoch plans vs LRU vs simulated MIN (issue 16)
    exec "$PY" "$HERE/plan.py"
fi
if [ "${BENCH_ONLY:-all}" = checkpoint ]; then # write-back vs write-through (issue 18)
    exec "$PY" "$HERE/checkpoint.py"
fi
if [ "${BENCH_ONLY:-all}" = complete ]; then # reads while a Complete assembles
    exec "$PY" "$HERE/complete_stall.py"
fi
if [ "${BENCH_ONLY:-all}" = lifecycle ]; then # rules' cost on GETs and per pass
    exec "$PY" "$HERE/lifecycle.py"
fi
if [ "${BENCH_ONLY:-all}" = cluster ]; then # direct vs 307 vs S3 relay (issue 4)
    exec "$PY" "$HERE/cluster.py"
fi
if [ "${BENCH_ONLY:-all}" = formats ]; then # batch GET output formats vs tar
    exec "$PY" "$HERE/batch_formats.py"
fi
if [ "${BENCH_ONLY:-all}" = tls ]; then # HTTPS vs nginx (issue 12)
    exec "$PY" "$HERE/tls.py"
fi

for t in nginx curl taskset "$PY"; do
    command -v "$t" >/dev/null || { echo "bench: $t not found (run make deps)" >&2; exit 1; }
done
[ -x "$HOARDD" ] || { echo "bench: $HOARDD not built" >&2; exit 1; }
HB="$TOP/$BUILD/bin/hoard-bench"
[ -x "$HB" ] || { echo "bench: $HB not built" >&2; exit 1; }
NCPU=$(nproc)
ALLCPUS="0-$((NCPU - 1))"
PIN=1
[ "$NCPU" -ge 2 ] || PIN=0

# Shards vs individual objects (issue 6): its own cluster, see shard_bench.py.
shard_bench() { # OUT.md
    local conns="4,16"
    [ "${BENCH_QUICK:-0}" = 1 ] && conns=16
    echo "bench: shards vs objects (test/bench/shard_bench.py)"
    "$PY" "$HERE/shard_bench.py" --hoardd "$HOARDD" --dir "$TOP/$BUILD/bench/shard" \
        --repeats "$REPEATS" --conns "$conns" --out "$1"
}
if [ "${BENCH_ONLY:-all}" = shard ]; then
    mkdir -p "$TOP/$BUILD/bench"
    shard_bench "$TOP/$BUILD/bench/results-shard.md"
    echo "bench: results in $TOP/$BUILD/bench/results-shard.md"
    exit 0
fi

mkdir -p "$B"/nginx/tmp "$B"/ref "$B"/www
RAW="$B/raw.tsv"
: >"$RAW"
HPID=""
NPID=""

cleanup() {
    local rc=$?
    [ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
    [ -n "$NPID" ] && kill -QUIT "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
    rm -f "$B"/ref/*/tmp-* 2>/dev/null
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_http() { # URL
    local _
    for _ in $(seq 1 100); do
        curl -sf -o /dev/null "$1" && return 0
        sleep 0.1
    done
    echo "bench: $1 did not come up" >&2
    return 1
}

# ---- dataset (reused between runs: see TESTING.md on file creation after deletes) ----
echo "bench: preparing dataset in $B/www"
bench_py mkdata "$B/www"

# ---- nginx ----
NPORT=$(bench_py port)
USERLINE=""
[ "$(id -u)" -eq 0 ] && USERLINE="user root;"
cat >"$B/nginx/nginx.conf" <<EOF
$USERLINE
worker_processes 2;
daemon off;
pid $B/nginx/nginx.pid;
error_log $B/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path $B/nginx/tmp;
    server {
        listen 127.0.0.1:$NPORT;
        root $B/www;
    }
}
EOF
nginx -p "$B/nginx" -c "$B/nginx/nginx.conf" -e "$B/nginx/error.log" &
NPID=$!
wait_http "http://127.0.0.1:$NPORT/10k/o-000"

# ---- hoard target ----
HPORT=$(bench_py port)
# shellcheck disable=SC2086 # BENCH_HOARD_ARGS is a list of options
"$HOARDD" --role target --listen "127.0.0.1:$HPORT" --data "$B/hoard" --log.level warn \
    --store.fsync true ${BENCH_HOARD_ARGS:-} 2>>"$B/hoardd.log" &
HPID=$!
wait_http "http://127.0.0.1:$HPORT/v1/health"
bench_py load "127.0.0.1:$HPORT" bench "$B/www"
curl -sf -o /dev/null -X POST "http://127.0.0.1:$HPORT/v1/buckets/benchput" || true

for s in "${GET_SETS[@]}"; do
    sed "s|.*|url = \"http://127.0.0.1:$HPORT/v1/objects/bench/&\"\noutput = \"/dev/null\"|" \
        "$B/www/paths-$s.txt" >"$B/warm-hoard-$s.curl"
    # the same keys for hoard-bench, on either server
    bench_py urls "$B/www/paths-$s.txt" "http://127.0.0.1:$HPORT/v1/objects/bench/" "$B/urls-hoard-$s.txt"
    bench_py urls "$B/www/paths-$s.txt" "http://127.0.0.1:$NPORT/" "$B/urls-nginx-$s.txt"
done

echo "bench: nginx 127.0.0.1:$NPORT (pid $NPID), hoardd 127.0.0.1:$HPORT (pid $HPID);" \
    "$REPEATS x ${SECS}s per measurement, $NCPU CPUs"

server_pids() { # hoard|nginx
    if [ "$1" = hoard ]; then
        echo "$HPID"
    else
        echo "$NPID"
        pgrep -P "$NPID" || true
    fi
}

pin_server() { # hoard|nginx CPULIST
    local p
    for p in $(server_pids "$1"); do
        taskset -a -p -c "$2" "$p" >/dev/null
    done
}

warm() { # hoard|nginx SET
    if [ "$1" = hoard ]; then
        curl -sf -K "$B/warm-hoard-$2.curl"
    else
        cat "$B/www/$2"/o-* >/dev/null
    fi
}

# Appends one row to $RAW from the BENCH line in file $6.
record() { # kind set conc server rep outfile
    local line
    line=$(grep '^BENCH ' "$6" | tail -1 || true)
    if [ -z "$line" ]; then
        echo "bench: no result from $1 $2 c=$3 $4 (output in $6)" >&2
        cat "$6" >&2
        return 0
    fi
    awk -v kind="$1" -v set="$2" -v conc="$3" -v srv="$4" -v rep="$5" -v size="${SIZE[$2]}" '
        { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END {
            rps = v["requests"] / (v["duration_us"] / 1e6)
            mibs = rps * size / 1048576
            printf "%s\t%s\t%d\t%s\t%d\t%.1f\t%.1f\t%d\n", kind, set, conc, srv, rep, rps, mibs, v["errors"]
            printf "  %-4s %-5s c=%-3d %-12s rep %d: %9.0f req/s %8.1f MiB/s%s\n", toupper(kind), set, conc, srv, rep, rps, mibs, (v["errors"] > 0 ? "  errors=" v["errors"] : "") > "/dev/stderr"
        }' <<<"$line" >>"$RAW"
}

# hoard-bench (the same client for hoard and nginx) with the right thread count; its report
# becomes a BENCH line in OUTFILE. c=1 runs pin the server to CPU 0 and the client to CPU 1.
run_load() { # server conc outfile hoard-bench-args...
    local srv=$1 c=$2 out=$3 t=2 pre=()
    shift 3
    [ "$c" -lt 2 ] && t=1
    if [ "$c" = 1 ] && [ "$PIN" = 1 ]; then
        pin_server "$srv" 0
        pre=(taskset -c 1)
    fi
    "${pre[@]}" "$HB" --conns "$c" --threads "$t" --secs "$SECS" --warmup 0 --timeout 30 \
        --json "$@" >"$out.json" 2>"$out.err" || true
    bench_py hbline "$out.json" >"$out" 2>&1
    cat "$out.err" >>"$out"
    [ "$c" = 1 ] && [ "$PIN" = 1 ] && pin_server "$srv" "$ALLCPUS"
    return 0
}

OUT="$B/last.out"
ONLY="${BENCH_ONLY:-all}"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- 1. warm GET ----
[ "$ONLY" = put ] && GET_SETS=()
for s in "${GET_SETS[@]}"; do
    for rep in $(seq 1 "$REPEATS"); do
        for c in "${GET_CONNS[@]}"; do
            order=(hoard nginx)
            [ $((rep % 2)) = 0 ] && order=(nginx hoard)
            for srv in "${order[@]}"; do
                warm "$srv" "$s"
                run_load "$srv" "$c" "$OUT" --urls "$B/urls-$srv-$s.txt"
                record get "$s" "$c" "$srv" "$rep" "$OUT"
            done
        done
    done
done

# ---- 2. PUT vs write+fsync ----
run_ref() { # set conc outfile
    local pre=()
    [ "$2" = 1 ] && [ "$PIN" = 1 ] && pre=(taskset -c 0)
    "${pre[@]}" "$PY" "$HERE/bench.py" fsyncw "$2" "${SIZE[$1]}" "$SECS" "$B/ref/$1" "${PUT_SLOTS[$1]}" >"$3" 2>&1 || true
}
run_put() { # set conc outfile
    run_load hoard "$2" "$3" --base "http://127.0.0.1:$HPORT/v1/objects/benchput/$1" \
        --objects "${PUT_SLOTS[$1]}" --put 100 --size "${SIZE[$1]}"
}
PUT_SETS=(10k 10m)
[ "$ONLY" = get ] && PUT_SETS=()
for s in "${PUT_SETS[@]}"; do
    # Untimed warm-up: creates every slot once (later runs overwrite, as steady state does).
    SECS_SAVE=$SECS
    SECS=2
    run_put "$s" 4 "$OUT"
    run_ref "$s" 4 "$OUT"
    SECS=$SECS_SAVE
    for rep in $(seq 1 "$REPEATS"); do
        for c in ${PUT_CONNS[$s]}; do
            order=(hoard write+fsync)
            [ $((rep % 2)) = 0 ] && order=(write+fsync hoard)
            for srv in "${order[@]}"; do
                if [ "$srv" = hoard ]; then
                    run_put "$s" "$c" "$OUT"
                else
                    run_ref "$s" "$c" "$OUT"
                fi
                record put "$s" "$c" "$srv" "$rep" "$OUT"
            done
        done
    done
done

# ---- 3. report ----
{
    echo "# hoard benchmark results"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $NCPU CPUs, $REPEATS x ${SECS}s per measurement," \
        "hoard $(git rev-parse --short HEAD 2>/dev/null || echo '?'), nginx $(nginx -v 2>&1 | sed 's|.*/||')," \
        "load: hoard-bench (libcurl $(curl-config --version 2>/dev/null | cut -d' ' -f2 || echo '?'))"
    echo
    echo "hoardd: $HOARDD ${BENCH_HOARD_ARGS:-}; load average at start $LOAD0, at end" \
        "$(cut -d' ' -f1-3 /proc/loadavg) (the VM is shared: compare ratios, not absolutes)"
    echo
} >"$B/results.md.head"
echo
bench_py report "$RAW" "$B/results.body.md" >/dev/null
if [ "$ONLY" = all ]; then
    [ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
    HPID=""
    shard_bench "$B/results.shard.md" >/dev/null
    { echo; cat "$B/results.shard.md"; } >>"$B/results.body.md"
fi
cat "$B/results.md.head" "$B/results.body.md" >"$B/results.md"
rm -f "$B/results.md.head" "$B/results.body.md"
cat "$B/results.md"
echo
echo "bench: results in $B/results.md (raw rows in $RAW)"
if [ "$ONLY" = all ]; then # the caching tier (issue 5) and the cluster data paths (issue 4)
    "$PY" "$HERE/cache.py" || echo "bench: the caching-tier benchmark failed" >&2
    "$PY" "$HERE/coldget.py" || echo "bench: the cold GET vs nginx proxy_cache benchmark failed" >&2
    "$PY" "$HERE/cluster.py" || echo "bench: the cluster benchmark failed" >&2
    "$PY" "$HERE/tls.py" || echo "bench: the HTTPS benchmark failed" >&2
fi
