#!/usr/bin/env bash
# Builds the hoard container image on a machine without a reachable registry:
#   deploy/docker/build.sh [--tag NAME:TAG] [--keep-daemon] [--quiet]
# Installs docker.io and debootstrap if missing, starts a private dockerd (no bridge network,
# see lib.sh), makes the Debian base images with debootstrap once, then builds
# deploy/docker/Dockerfile with the classic builder (DOCKER_BUILDKIT=0) and --network host
# (the build stage runs apt-get). Stops the dockerd it started unless --keep-daemon.
# --quiet: the build's output goes to /run/hoard-docker/build.log (its tail on failure).
# Talk to that daemon with: docker -H unix:///run/hoard-docker/docker.sock ...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=deploy/docker/lib.sh
. "$here/lib.sh"

tag="hoard:latest" keep="" quiet=""
while [ $# -gt 0 ]; do
    case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --keep-daemon) keep=1; shift ;;
    --quiet) quiet=1; shift ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) hd_die "unknown argument '$1' (see --help)" ;;
    esac
done

hd_image_deps
hd_lock
trap '[ -n "$keep" ] || hd_dockerd_stop' EXIT
hd_dockerd_start
hd_base_images
version="$(git -C "$repo" describe --always --dirty 2>/dev/null || echo dev)"
hd_log "building $tag (source $version)"
start=$(date +%s)
build=(nice "${DOCKER[@]}" build --network host --pull=false
    --build-arg "BUILD_IMAGE=$HOARD_BASE_REPO:bookworm"
    --build-arg "RUN_IMAGE=$HOARD_BASE_REPO:bookworm-slim"
    --label "org.opencontainers.image.revision=$version"
    -f "$here/Dockerfile" -t "$tag" "$repo")
if [ -n "$quiet" ]; then
    if ! "${build[@]}" >"$HOARD_DOCKER_RUN/build.log" 2>&1; then
        tail -n 40 "$HOARD_DOCKER_RUN/build.log" >&2
        hd_die "image build failed (whole log: $HOARD_DOCKER_RUN/build.log)"
    fi
else
    "${build[@]}"
fi
# drop previous builds of the image (untagged now); keep the build stage, the layer cache
"${DOCKER[@]}" image prune -f --filter label=org.opencontainers.image.revision >/dev/null
size="$("${DOCKER[@]}" image inspect -f '{{.Size}}' "$tag")"
hd_log "built $tag in $(($(date +%s) - start)) s, $((size / 1048576)) MiB"
