#!/usr/bin/env bash
# Runs the integration suite (pytest under Debian's python3, which sees python3-boto3 etc.)
# against real hoardd processes started by the fixtures in conftest.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
export HOARD_BUILD="${HOARD_BUILD:-build}"
export HOARD_BIN="$PWD/$HOARD_BUILD/bin"
export PYTHONDONTWRITEBYTECODE=1
# an ASan build (make SAN=asan) keeps freed memory in a quarantine, 256 MiB by default: the
# RSS bounds of the relay tests need the small one the Makefile sets
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=8}"
# run.sh test/integration/test_X.py[::name] runs that file only; other arguments go to pytest
# The whole suite runs in HOARD_TEST_JOBS pytest-xdist workers (default 2), one test file at a
# time per worker: most of a test's time is spent waiting on processes and sockets, so two
# workers take 7 minutes where one takes 12 on this project's 2-core VM. Each worker starts its
# own session clusters and s3rver on free ports. HOARD_TEST_JOBS=0 runs in this process.
where=test/integration
for a in "$@"; do
    case "$a" in test/* | *.py | *::*) where= ;; esac
done
workers=()
jobs="${HOARD_TEST_JOBS:-2}"
if [ -n "$where" ] && [ "$jobs" != 0 ]; then
    workers=(-n "$jobs" --dist loadfile)
fi
exec /usr/bin/python3 -m pytest -q -rsx -p no:cacheprovider "${workers[@]}" $where "$@"
