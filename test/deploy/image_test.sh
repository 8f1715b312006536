#!/usr/bin/env bash
# make test's image step: builds the image (deploy/docker/build.sh) and runs its smoke test.
# Skips, saying why, only where containers cannot run at all: not root, or dockerd cannot
# start on this kernel. Any other failure (build, smoke test) fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" -ne 0 ]; then
    echo "image-test: SKIPPED: building and running images needs root (dockerd)"
    exit 0
fi
bash deploy/docker/build.sh --quiet
rc=$?
if [ $rc -eq 3 ]; then
    echo "image-test: SKIPPED: dockerd cannot run on this machine (see the log above)"
    exit 0
fi
[ $rc -eq 0 ] || exit $rc
exec bash test/deploy/image_smoke.sh
