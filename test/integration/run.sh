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
where=test/integration
for a in "$@"; do
    case "$a" in test/* | *.py | *::*) where= ;; esac
done
exec /usr/bin/python3 -m pytest -q -rsx -p no:cacheprovider $where "$@"
