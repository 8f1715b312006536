#!/usr/bin/env bash
# `make run`: a local hoard cluster (1 proxy + 3 targets, 2 mountpaths each) on loopback, in
# the foreground, with every node's log on this terminal. Ctrl-C stops all of it; state,
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
    trap - INT TERM EXIT
    pkill -P $$ 2>/dev/null # the log tails
    echo
    "$CLUSTER" down --dir "$DIR"
    exit "$1"
}

mkdir -p "$DIR/logs"
trap 'stop 0' INT TERM
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
wait
