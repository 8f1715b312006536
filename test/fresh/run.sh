#!/usr/bin/env bash
# make test-fresh: the README's first run on a truly fresh Debian root. debootstrap (minbase,
# the same call and mirror lookup as the image's base, deploy/docker/lib.sh) makes a bookworm
# root with only git, make and ca-certificates; this machine's CA certificates, apt sources
# and apt/npm settings are copied in (the way they reach a new machine here: no mirror host is
# written into the repository); the repository's committed HEAD is cloned into it; then, in a
# chroot, `make run` (which installs everything with apt-get and npm: hundreds of MB) until
# the cluster answers, SIGTERM to make (the cluster must stop), and `make unit`.
#   HOARD_FRESH_DIR   work directory (default /var/tmp/hoard-fresh; the root is made afresh)
#   HOARD_FRESH_KEEP=1  keep the root afterwards (default: removed)
#   HOARD_FRESH_FULL=1  instead: the README's test command (`make test`, everything CI runs) as
#                       the root's first command (about 25 minutes here)
# Needs root (debootstrap, chroot, mounts); without it, it says so and exits 0 (skipped).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=deploy/docker/lib.sh
. "$repo/deploy/docker/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "test-fresh: SKIPPED: needs root (debootstrap, chroot and bind mounts)"
    exit 0
fi
if ! command -v debootstrap >/dev/null; then
    hd_log "installing debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

work="${HOARD_FRESH_DIR:-/var/tmp/hoard-fresh}"
root="$work/root"
port="${HOARD_FRESH_PORT:-$((20000 + RANDOM % 10000))}"
mounts=()
make_pid=""

# Everything mounted at or under the root, deepest first: the suites in it mount too (the
# multi-host test's /run/netns), and a mount left there keeps the root from being removed.
umount_under() { # dir
    local m
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

cleanup() {
    local m i
    if [ -n "$make_pid" ] && kill -0 "$make_pid" 2>/dev/null; then
        kill -TERM "$make_pid" 2>/dev/null || true
        sleep 5
    fi
    # anything still running from the root (nodes, tails): killed by pid, then unmounted
    for i in /proc/[0-9]*; do
        if [ "$(readlink "$i/root" 2>/dev/null)" = "$root" ]; then
            kill -KILL "${i#/proc/}" 2>/dev/null || true
        fi
    done
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        m="${mounts[$i]}"
        umount -l "$m" 2>/dev/null || true
    done
    if [ -z "${HOARD_FRESH_KEEP:-}" ] && [ -d "$root" ]; then
        umount_under "$root"
        rm -rf --one-file-system "$root"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$work/cache"
if [ -d "$root" ]; then
    umount_under "$root"
    rm -rf --one-file-system "$root"
fi
mirror="$(hd_debian_mirror)"
start=$(date +%s)
hd_log "debootstrap --variant=minbase bookworm into $root (mirror from this machine's apt sources)"
if ! debootstrap --variant=minbase --include=git,make,ca-certificates --cache-dir="$work/cache" \
    bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    hd_die "debootstrap failed (log: $work/debootstrap.log)"
fi

# what a new machine here gets from its image: apt sources and settings, CAs, npm settings
if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
    rm -f "$root/etc/apt/sources.list"
elif [ -r /etc/apt/sources.list ]; then
    cp /etc/apt/sources.list "$root/etc/apt/sources.list"
fi
for f in /etc/apt/apt.conf.d/*; do
    case "$(basename "$f")" in docker-* | *packagekit* | *appstream* | *postgresql*) continue ;; esac
    cp "$f" "$root/etc/apt/apt.conf.d/"
done
mkdir -p "$root/usr/local/share/ca-certificates"
cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
[ -r /etc/npmrc ] && cp /etc/npmrc "$root/etc/npmrc"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

for m in dev dev/pts proc sys; do
    mount --bind "/$m" "$root/$m"
    mounts+=("$root/$m")
done
# downloaded .debs are kept between runs (the root itself is new each time)
mkdir -p "$work/apt-archives/partial"
mount --bind "$work/apt-archives" "$root/var/cache/apt/archives"
mounts+=("$root/var/cache/apt/archives")
rm -f "$root/etc/apt/apt.conf.d/docker-clean" # it would empty the kept archives
hd_log "cloning $repo (committed HEAD $(git -C "$repo" rev-parse --short HEAD)) into the root"
git clone -q --no-local "$repo" "$root/src/hoard"

in_root() { # command...: in the chroot, as root, with a plain login environment
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
        NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt "$@"
}
in_root update-ca-certificates >/dev/null

if [ -n "${HOARD_FRESH_FULL:-}" ]; then
    hd_log "make test in the root (its first command: installs the dependencies, then every suite)"
    if ! in_root bash -c "cd /src/hoard && make test" >"$work/test.log" 2>&1; then
        tail -n 40 "$work/test.log" >&2
        hd_die "make test failed in the fresh root (log: $work/test.log)"
    fi
    grep -E "[0-9]+ passed" "$work/test.log" | tail -n 6
    hd_log "test-fresh (make test): passed in $(($(date +%s) - start)) s (logs in $work)"
    exit 0
fi

hd_log "make run in the root (port $port; installs the dependencies: a while)"
# a simple command, not the function: $! must be make itself (chroot, env and bash exec)
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    bash -c "cd /src/hoard && HOARD_PORT=$port exec make run" >"$work/make-run.log" 2>&1 &
make_pid=$!
ok=""
for _ in $(seq 1 1800); do # 30 minutes at most for apt, npm and the build
    if curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/health?ready=true" 2>/dev/null |
        grep -q 200; then
        ok=1
        break
    fi
    kill -0 "$make_pid" 2>/dev/null || break
    sleep 1
done
if [ -z "$ok" ]; then
    tail -n 40 "$work/make-run.log" >&2
    hd_die "the cluster of \`make run\` did not answer (log: $work/make-run.log)"
fi
hd_log "cluster answers on 127.0.0.1:$port after $(($(date +%s) - start)) s; SIGTERM to make"
kill -TERM "$make_pid"
for _ in $(seq 1 60); do
    kill -0 "$make_pid" 2>/dev/null || break
    sleep 1
done
if kill -0 "$make_pid" 2>/dev/null || pgrep -f "/src/hoard/build/bin/hoardd" >/dev/null; then
    hd_die "make run did not stop its cluster on SIGTERM (log: $work/make-run.log)"
fi
make_pid=""
grep -q "hoard cluster in .* stopped" "$work/make-run.log" || hd_die "no 'stopped' in $work/make-run.log"

hd_log "make unit in the root"
if ! in_root bash -c "cd /src/hoard && make unit" >"$work/unit.log" 2>&1; then
    tail -n 40 "$work/unit.log" >&2
    hd_die "make unit failed in the fresh root (log: $work/unit.log)"
fi
tail -n 3 "$work/unit.log"
hd_log "test-fresh: passed in $(($(date +%s) - start)) s (logs in $work)"
