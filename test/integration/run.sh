#!/usr/bin/env bash
# Runs the integration suite (pytest under Debian's python3, which sees python3-boto3 etc.)
# against real hoardd processes started by the fixtures in conftest.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
export HOARD_BUILD="${HOARD_BUILD:-build}"
export HOARD_BIN="$PWD/$HOARD_BUILD/bin"
export PYTHONDONTWRITEBYTECODE=1
# With test files or node ids as arguments, only those run; with none (or options only), all.
for a in "$@"; do
    [ -e "${a%%::*}" ] && exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
done
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider test/integration "$@"
