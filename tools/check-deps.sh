#!/usr/bin/env bash
# Module dependencies point one way: server -> {proxy, target} -> common. tools/ uses common/ only.
# Inside proxy/ and target/, folders are layers: tools/layers.py (docs/architecture.md).
set -u
cd "$(dirname "$0")/.."
bad=0
check() { # dir, forbidden-regex
    local hits
    hits=$(grep -rnE "#include \"($2)/" "$1" --include='*.c' --include='*.h' 2>/dev/null)
    if [ -n "$hits" ]; then echo "check-deps: $1/ must not include $2/:"; echo "$hits"; bad=1; fi
}
check proxy 'target|server|tools'
check target 'proxy|server|tools'
check common 'proxy|target|server|tools'
check tools 'proxy|target|server'
[ $bad -eq 0 ] && echo "check-deps: ok"
# the layers inside each role, from includes and (when built) the objects' symbol tables
/usr/bin/python3 tools/layers.py "${HOARD_BUILD:-build}" || bad=1
exit $bad
