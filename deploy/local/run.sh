#!/usr/bin/env bash
# `make run`: one hoard target on loopback, data under ./.hoard/, in the foreground.
# Credentials are generated on first start and kept in ./.hoard/credentials.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${HOARD_BUILD:-build}/bin"
DIR="${HOARD_DIR:-$PWD/.hoard}"
PORT="${HOARD_PORT:-8080}"
mkdir -p "$DIR"
if [ ! -s "$DIR/credentials" ]; then
    ak="HOARD$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
    sk="$(head -c 30 /dev/urandom | base64 | tr -d '/+=' | head -c 40)"
    umask 077
    printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$ak" "$sk" > "$DIR/credentials"
fi
# shellcheck disable=SC1091
. "$DIR/credentials"
cat <<MSG
hoard target on http://127.0.0.1:$PORT   (data: $DIR/data, Ctrl-C stops)

  export HOARD_ENDPOINT=http://127.0.0.1:$PORT
  export AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID
  export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
  export AWS_DEFAULT_REGION=us-east-1

  aws --endpoint-url http://127.0.0.1:$PORT s3 mb s3://demo
  aws --endpoint-url http://127.0.0.1:$PORT s3 cp README.md s3://demo/
  curl http://127.0.0.1:$PORT/v1/objects/demo/README.md
  $BIN/hoard object ls demo

MSG
exec "$BIN/hoardd" --role target --listen "127.0.0.1:$PORT" --data "$DIR/data" \
    --mountpaths "$DIR/data/mp1,$DIR/data/mp2" \
    --auth.keys "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" --log.access - 
