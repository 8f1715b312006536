#!/usr/bin/env bash
# `make run`: a local hoard cluster (1 proxy + 3 targets, 2 mountpaths each) on loopback, in
# the foreground, with every node's log on this terminal. Ctrl-C stops all of it (so do SIGTERM
# and SIGHUP: a supervisor, `timeout`, a closed terminal); state,
# objects and the generated credentials stay in ./.hoard/cluster, so the next `make run`
# brings the same cluster back.
#   HOARD_DIR (default ./.hoard)  HOARD_PORT (default 8080: the proxy; targets take the next 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${HOARD_BUILD:-build}/bin"
DIR="${HOARD_DIR:-$PWD/.hoard}/cluster"
PORT="${HOARD_PORT:-8080}"
CLUSTER=deploy/local/cluster.sh

stop() { # exit code
    trap - INT TERM HUP EXIT
    pkill -P $$ 2>/dev/null || true # the log tails (if none, pkill fails: not fatal)
    echo
    "$CLUSTER" down --dir "$DIR"
    exit "$1"
}

mkdir -p "$DIR/logs"
# The signal trap only takes note; the loop at the end stops the cluster. A trap doing the
# work itself ran at whatever point bash noticed the signal: in the middle of starting the log
# pipelines it was seen to stop nothing and leave run.sh waiting for ever.
stopping=
trap 'stopping=1' INT TERM HUP
trap 'stop $?' EXIT
"$CLUSTER" up --proxies 1 --targets 3 --mountpaths 2 --port "$PORT" --dir "$DIR" >"$DIR/up.txt"
# shellcheck disable=SC1091
. "$DIR/credentials"
EP="http://127.0.0.1:$PORT"
cat <<MSG
hoard: 1 proxy + 3 targets on $EP (targets on ports $((PORT + 1))-$((PORT + 3)))
state and logs in $DIR; Ctrl-C stops the cluster

  export HOARD_ENDPOINT=$EP
  export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
  export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
  export AWS_DEFAULT_REGION=us-east-1

  aws --endpoint-url $EP s3 mb s3://demo
  aws --endpoint-url $EP s3 cp README.md s3://demo/
  curl -L --aws-sigv4 aws:amz:us-east-1:s3 --user "\$AWS_ACCESS_KEY_ID:\$AWS_SECRET_ACCESS_KEY" \\
       $EP/v1/objects/demo/README.md      # 307 from the proxy to the owning target
  $BIN/hoard cluster show
  $BIN/hoard object ls demo

MSG
# every node's log, each line tagged with the node's name
for n in p1 t1 t2 t3; do
    tail -n 5 -F "$DIR/logs/$n.log" 2>/dev/null | sed -u "s/^/$n  /" &
done
# Not a bare `wait` for the tails: bash may notice a signal that arrives just as `wait` begins
# only when a child exits (the tails never do). A short sleep always ends.
while [ -z "$stopping" ]; do
    sleep 1 &
    wait $! || true
done
stop 0
