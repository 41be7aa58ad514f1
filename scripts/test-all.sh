#!/usr/bin/env bash
# The whole test suite (`npm test`): the native core under ASan+UBSan with its
# fuzz targets, then the TypeScript suites against the built addon.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/test-native.sh
npm run test:js
