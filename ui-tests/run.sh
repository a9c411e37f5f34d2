#!/usr/bin/env bash
# The lab extension's tests from a fresh clone, after the README's `pip install` (which builds the
# extension) and `apt-get install -y chromium`: jest unit tests, then the Playwright browser tests
# headless against Debian's chromium and a real JupyterLab with scripted models.
# Exits non-zero on any failure. Screenshots: ui-tests/test-results/screenshots/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"

command -v chromium >/dev/null || { echo "ui-tests: no chromium on PATH (apt-get install -y chromium)" >&2; exit 2; }
jupyter labextension list 2>&1 | grep -q 'prime-kernel.*enabled.*OK' || {
  echo "ui-tests: the prime-kernel lab extension is not installed (pip install -e . first)" >&2
  exit 2
}

cd "$repo"
[ -d node_modules/jest-environment-jsdom ] || npm ci --no-audit --no-fund
npx jest --ci

cd "$here"
npm ci --no-audit --no-fund
CI=1 npx playwright test "$@"
