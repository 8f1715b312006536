# Shared by deploy/docker/build.sh and test/deploy/image_smoke.sh (sourced, not run).
# A private Docker daemon for machines without a registry or a bridge network: Debian's
# dockerd started by hand with its own socket, data root and exec root, no bridge, no
# iptables (containers use --network host or none), and local base images made with
# debootstrap.
HOARD_DOCKER_ROOT="${HOARD_DOCKER_ROOT:-/var/lib/hoard-docker}"
HOARD_DOCKER_RUN="${HOARD_DOCKER_RUN:-/run/hoard-docker}"
HOARD_DOCKER_SOCK="unix://$HOARD_DOCKER_RUN/docker.sock"
HOARD_BASE_REPO="${HOARD_BASE_REPO:-hoard-base/debian}"
DOCKER=(/usr/bin/docker -H "$HOARD_DOCKER_SOCK")
export DOCKER_BUILDKIT=0
_hd_started_dockerd=""

hd_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
hd_die() { echo "error: $1" >&2; exit "${2:-1}"; } # message [exit code; 3: no container runtime here]

# Installs docker.io and debootstrap when missing (idempotent; apt-get only if needed).
hd_image_deps() {
    [ "$(id -u)" -eq 0 ] || hd_die "building images needs root (dockerd, debootstrap)"
    bash "$(dirname "${BASH_SOURCE[0]}")/../local/install-deps.sh" --image
}

hd_docker_up() { "${DOCKER[@]}" version >/dev/null 2>&1; }

# Serialises users of the private daemon on this machine (a build or smoke test in another
# worktree would otherwise stop the daemon under us); released when the shell exits.
hd_lock() {
    mkdir -p "$HOARD_DOCKER_RUN"
    exec 9>"$HOARD_DOCKER_RUN.lock"
    if ! flock -n 9; then
        hd_log "waiting for another user of the private dockerd ($HOARD_DOCKER_RUN.lock)"
        flock -w 1800 9 || hd_die "could not lock $HOARD_DOCKER_RUN.lock"
    fi
}

# Starts the private dockerd unless one already answers on our socket.
hd_dockerd_start() {
    local i
    hd_docker_up && return 0
    mkdir -p "$HOARD_DOCKER_ROOT" "$HOARD_DOCKER_RUN"
    hd_log "starting dockerd (socket $HOARD_DOCKER_SOCK, data $HOARD_DOCKER_ROOT, no bridge)"
    setsid /usr/sbin/dockerd --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
        --data-root "$HOARD_DOCKER_ROOT" --exec-root "$HOARD_DOCKER_RUN/exec" \
        --pidfile "$HOARD_DOCKER_RUN/dockerd.pid" -H "$HOARD_DOCKER_SOCK" \
        </dev/null >"$HOARD_DOCKER_RUN/dockerd.log" 2>&1 &
    _hd_started_dockerd=$!
    for i in $(seq 1 120); do
        hd_docker_up && return 0
        kill -0 "$_hd_started_dockerd" 2>/dev/null || break
        sleep 0.5
    done
    tail -n 20 "$HOARD_DOCKER_RUN/dockerd.log" >&2
    hd_die "dockerd did not come up" 3
}

# Stops the dockerd this shell started (never one that was already running).
hd_dockerd_stop() {
    local pid="$_hd_started_dockerd" i
    [ -n "$pid" ] || return 0
    _hd_started_dockerd=""
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 60); do
        kill -0 "$pid" 2>/dev/null || { hd_log "dockerd stopped"; return 0; }
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# The Debian mirror this machine's apt uses (no host is written into the repository).
hd_debian_mirror() {
    local m=""
    if [ -n "${HOARD_DEBIAN_MIRROR:-}" ]; then
        echo "$HOARD_DEBIAN_MIRROR"
        return
    fi
    if [ -r /etc/apt/sources.list.d/debian.sources ]; then
        m="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
    fi
    if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
        m="$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list)"
    fi
    [ -n "$m" ] || hd_die "no Debian mirror in the apt sources; set HOARD_DEBIAN_MIRROR"
    echo "$m"
}

# Makes $HOARD_BASE_REPO:bookworm (debootstrap minbase) and :bookworm-slim (the same without
# documentation, man pages and locales, dpkg told to keep them out, as Debian's slim images).
hd_base_images() {
    local tmp mirror
    if "${DOCKER[@]}" image inspect "$HOARD_BASE_REPO:bookworm" >/dev/null 2>&1 &&
        "${DOCKER[@]}" image inspect "$HOARD_BASE_REPO:bookworm-slim" >/dev/null 2>&1; then
        hd_log "base images $HOARD_BASE_REPO:bookworm{,-slim} present"
        return 0
    fi
    mirror="$(hd_debian_mirror)"
    tmp="$(mktemp -d /var/tmp/hoard-debootstrap.XXXXXX)"
    hd_log "debootstrap --variant=minbase bookworm into $tmp (mirror from apt sources)"
    if ! nice debootstrap --variant=minbase bookworm "$tmp/root" "$mirror" >"$tmp/log" 2>&1; then
        tail -n 20 "$tmp/log" >&2
        rm -rf "$tmp"
        hd_die "debootstrap failed"
    fi
    # use this machine's apt sources (updates and security too) when it has deb822 ones
    if [ -r /etc/apt/sources.list.d/debian.sources ]; then
        cp /etc/apt/sources.list.d/debian.sources "$tmp/root/etc/apt/sources.list.d/"
        rm -f "$tmp/root/etc/apt/sources.list"
    fi
    rm -rf "$tmp/root/var/lib/apt/lists/"* "$tmp/root/var/cache/apt/"*.bin \
        "$tmp/root/var/cache/apt/archives/"*.deb
    tar -C "$tmp/root" --numeric-owner -c . | "${DOCKER[@]}" import \
        -c 'CMD ["bash"]' - "$HOARD_BASE_REPO:bookworm" >/dev/null
    cat >"$tmp/root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
SLIM
    cat >"$tmp/root/etc/apt/apt.conf.d/docker-slim" <<'SLIM'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
SLIM
    find "$tmp/root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$tmp/root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$tmp/root/usr/share/man/"* "$tmp/root/usr/share/info/"* \
        "$tmp/root/usr/share/locale/"* "$tmp/root/usr/share/lintian/"* \
        "$tmp/root/usr/share/groff/"*
    tar -C "$tmp/root" --numeric-owner -c . | "${DOCKER[@]}" import \
        -c 'CMD ["bash"]' - "$HOARD_BASE_REPO:bookworm-slim" >/dev/null
    rm -rf "$tmp"
    hd_log "base images $HOARD_BASE_REPO:bookworm and :bookworm-slim imported"
}
