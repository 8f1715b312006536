#!/usr/bin/env bash
# A throwaway CA and one certificate per node name, for TLS on loopback (tests, cluster.sh up
# --tls). Never for production: the CA key sits next to the certificates, unencrypted.
#   deploy/local/mkcerts.sh DIR NAME...
# Writes DIR/ca.pem, DIR/ca.key and, per NAME, DIR/NAME.pem + DIR/NAME.key: an ECDSA P-256
# certificate valid for 30 days with SAN IP:127.0.0.1, DNS:localhost and DNS:NAME, usable as a
# server and as a client certificate (mutual TLS). An existing DIR/ca.pem is reused, so more
# names can be added later; the CN of a new CA is "hoard test CA <random>".
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME..." >&2; exit 2; }
dir="$1"
shift
command -v openssl >/dev/null || { echo "mkcerts.sh: openssl is needed" >&2; exit 1; }
mkdir -p "$dir"
umask 077
if [ ! -f "$dir/ca.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj "/CN=hoard test CA $(openssl rand -hex 4)" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        2>/dev/null
fi
for name in "$@"; do
    case "$name" in '' | *[!A-Za-z0-9._-]*) echo "mkcerts.sh: bad name '$name'" >&2; exit 2 ;; esac
    ext="$dir/$name.ext"
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth,clientAuth" \
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:$name" >"$ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
        -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 30 -extfile "$ext" -out "$dir/$name.pem" 2>/dev/null
    rm -f "$dir/$name.csr" "$ext"
done
chmod 644 "$dir"/*.pem
