#!/usr/bin/env bash
# Lint: banned calls, clang-format drift (report only), clang-tidy on changed-or-all sources.
set -u
cd "$(dirname "$0")/.."
rc=0
src=$(ls common/*.[ch] proxy/*.h proxy/*/*.[ch] target/*.h target/*/*.[ch] server/*.[ch] tools/hoard/*.[ch] 2>/dev/null)
banned=$(grep -nE '\b(sprintf|strcpy|strcat|atoi|gets|strtok)\s*\(' $src | grep -v 'snprintf\|vsnprintf')
if [ -n "$banned" ]; then echo "lint: banned calls:"; echo "$banned"; rc=1; fi
if command -v clang-format >/dev/null; then
    n=0
    for f in $src; do clang-format --dry-run "$f" 2>&1 | grep -q warning && n=$((n+1)); done
    [ $n -gt 0 ] && echo "lint: $n file(s) differ from .clang-format (run make format)"
fi
if command -v clang-tidy >/dev/null; then
    flags="-std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags libmicrohttpd libcurl openssl libuv sqlite3 jansson expat libxxhash libarchive)"
    # one file per clang-tidy process: in a multi-file run the analyzer's va_list state leaks
    # from one file into the next (llvm-project#40656), reporting correct vsnprintf calls as
    # "uninitialized va_list"; a header's findings repeat per file, hence sort -u
    out=$(ls common/*.c proxy/*/*.c target/*/*.c server/*.c 2>/dev/null |
        xargs -P2 -I{} clang-tidy --quiet {} -- $flags 2>/dev/null |
        grep -E 'warning:|error:' | sed "s|^$PWD/||; s|^\./||" | sort -u)
    if [ -n "$out" ]; then echo "$out"; echo "lint: clang-tidy reported $(echo "$out" | wc -l) finding(s)"; fi
fi
[ $rc -eq 0 ] && echo "lint: ok"
exit $rc
