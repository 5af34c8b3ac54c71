#!/usr/bin/env bash
# The OpenCode plugin's cost per bus event inside OpenCode: every event and tool
# hook of RUNS `opencode run` turns (one `bash` call each, against a scripted
# chat-completions API on loopback) goes to sessionpipe's plugin and to an empty
# plugin in alternating order, each timed from the call to its handler
# returning, with a daemon taking the jobs. Prints p50/p99 per plugin for
# the events sessionpipe hands over (a job file and a wake) and for those its
# filter passes over. Needs node and OpenCode from e2e/ (npm ci there).
# Usage: bench/opencode_plugin.sh [RUNS] [BIN_DIR]  (BIN_DIR: binaries already
# built, e.g. target/debug; the default builds release ones)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
oc=e2e/node_modules/opencode-linux-x64/bin/opencode
[ -x "$oc" ] || { echo "OpenCode is not installed at $oc (npm ci in e2e/)" >&2; exit 1; }
if [ -n "${2:-}" ]; then
  rel=$(realpath "$2")
else
  cargo build --release -q -p sessionpipe-hook -p sessionpipe-core --bins
  rel=$(realpath "${CARGO_TARGET_DIR:-target}/release")
fi
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export HOME=$tmp/home SESSIONPIPE_STATE_DIR=$tmp/state
mkdir -p "$HOME/.config/opencode" "$HOME/project"
node bench/opencode/mock.mjs >"$tmp/port" &
while [ ! -s "$tmp/port" ]; do sleep 0.05; done
port=$(cat "$tmp/port")
cat >"$HOME/.config/opencode/opencode.json" <<JSON
{"provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
  "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "x"},
  "models": {"mock-model": {"name": "Mock", "tool_call": true}}}},
 "model": "mock/mock-model", "small_model": "mock/mock-model",
 "enabled_providers": ["mock"], "autoupdate": false, "share": "disabled",
 "permission": {"bash": "allow"}}
JSON
# The plugin as `install` writes it, moved out of the plugins folder: only the
# wrapper is loaded, and it calls both plugins.
SESSIONPIPE_HOOK_BIN=$rel/sessionpipe-hook "$rel/sessionpipe" install --harness opencode >/dev/null
mv "$HOME/.config/opencode/plugins/sessionpipe.js" "$tmp/sessionpipe.js"
cp bench/opencode/wrap.js "$HOME/.config/opencode/plugins/"
"$rel/sessionpipe" daemon >/dev/null 2>&1 &
while [ ! -S "$SESSIONPIPE_STATE_DIR/wake-stream.sock" ]; do sleep 0.05; done
export BENCH_PLUGIN=$tmp/sessionpipe.js BENCH_OUT=$tmp/samples
for k in OPENCODE_DISABLE_MODELS_FETCH OPENCODE_DISABLE_AUTOUPDATE OPENCODE_DISABLE_DEFAULT_PLUGINS \
  OPENCODE_DISABLE_LSP_DOWNLOAD OPENCODE_DISABLE_SHARE; do export "$k=true"; done
for _ in $(seq "$runs"); do
  (cd "$HOME/project" && "$OLDPWD/$oc" run --format json -m mock/mock-model run echo hello >/dev/null 2>&1)
done
echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) cores, OpenCode $("$oc" --version), $runs turns"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
const by = {};
for (const l of lines) { const [p, k, ns] = l.split(" "); (by[`${k} ${p}`] ??= []).push(Number(ns) / 1000); }
const q = (a, f) => a[Math.min(a.length - 1, Math.floor(f * a.length))];
for (const key of Object.keys(by).sort()) {
  const a = by[key].sort((x, y) => x - y);
  console.log(`${key.padEnd(20)} n=${String(a.length).padStart(5)}  p50 ${q(a, 0.5).toFixed(1).padStart(7)} µs  p99 ${q(a, 0.99).toFixed(1).padStart(7)} µs`);
}' "$tmp/samples"
sleep 1
echo "jobs left in the spool: $(find "$SESSIONPIPE_STATE_DIR/spool" -maxdepth 1 -name '*.job' | wc -l)"
