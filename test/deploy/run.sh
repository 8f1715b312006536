#!/usr/bin/env bash
# Deployment tests (make test-deploy): the Helm chart checks (test_chart.py: lint, render,
# Kubernetes schemas, yamllint, values schema, docs) and the multi-host test
# (test_multihost.py: the chart's pods in network namespaces; skipped, with the reason
# printed, where namespaces cannot be created). Needs deploy/local/install-deps.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/../.."
export HOARD_BUILD="${HOARD_BUILD:-build}"
export PYTHONDONTWRITEBYTECODE=1
# run.sh test/deploy/test_X.py runs that file only (make chart-check: test_chart.py alone);
# other arguments go to pytest
where=test/deploy
for a in "$@"; do
    case "$a" in test/* | *.py | *::*) where= ;; esac
done
exec /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider $where "$@"
