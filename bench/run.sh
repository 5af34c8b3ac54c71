#!/usr/bin/env bash
# Builds release binaries and runs the benchmarks whose results are in
# BENCHMARKS.md: the hook against /bin/true, hook -> outbox latency, ingest
# throughput, delivery throughput, hook -> receiver latency, control's round
# trip and starts (headless, and over ACP against the scripted test agent),
# the account pool's proxy, retention, a year of heavy use against a fresh
# install, and the daemon's idle memory.
#
# With BASELINE (the release folder of an earlier build, holding its
# sessionpipe, sessionpipe-hook and examples/), every benchmark runs for both
# builds in the same run: the hooks interleaved call by call, the others one
# after the other, this build first; ratios are this build over the baseline.
# Usage: bench/run.sh [RUNS] [BASELINE]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2000}"
base="${2:-}"
cargo build --release -q -p sessionpipe-hook -p sessionpipe-core --bins --examples
# The scripted ACP agent bench_acp drives (a test binary, never shipped).
cargo build --release -q -p sessionpipe-testkit --bin acp-test-agent
cargo build --release -q -p sessionpipe-pool --example bench_proxy
rel=${CARGO_TARGET_DIR:-target}/release
if [ -n "$base" ]; then
  for b in sessionpipe sessionpipe-hook examples/bench_latency examples/bench_ingest examples/bench_delivery; do
    [ -x "$base/$b" ] || { echo "missing $base/$b" >&2; exit 1; }
  done
fi
echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "hook binary: $(stat -c %s "$rel/sessionpipe-hook") bytes${base:+ (baseline: $(stat -c %s "$base/sessionpipe-hook") bytes)}"
echo
"$rel"/examples/bench_hook "$rel/sessionpipe-hook" "$rel/sessionpipe" "$runs" ${base:+"$base/sessionpipe-hook"}
# A Stop is one of the two hook calls that ask control; unpaired, a failed `openat`.
echo
"$rel"/examples/bench_hook "$rel/sessionpipe-hook" "$rel/sessionpipe" "$runs" "${base:+$base/sessionpipe-hook}" Stop
# The same for the shell-hook harnesses of M7, each with a payload of its own
# shape (bench/payloads/); Cursor's `stop` asks control like Claude Code's Stop.
for call in copilot-cli:preToolUse droid:PreToolUse cursor:preToolUse cursor:stop kiro:PreToolUse; do
  h=${call%%:*}
  e=${call#*:}
  echo
  "$rel"/examples/bench_hook "$rel/sessionpipe-hook" "$rel/sessionpipe" "$runs" "${base:+$base/sessionpipe-hook}" "$e" "$h" "bench/payloads/$h-$e.json"
done

# One benchmark for this build, then (with a baseline) for the baseline's.
both() {
  local name=$1
  shift
  echo
  [ -n "$base" ] && echo "### this build"
  "$rel/examples/$name" "$rel/sessionpipe-hook" "$rel/sessionpipe" "$@"
  if [ -n "$base" ]; then
    echo "### baseline"
    "$base/examples/$name" "$base/sessionpipe-hook" "$base/sessionpipe" "$@"
  fi
}
both bench_latency 500
echo
[ -n "$base" ] && echo "### this build"
"$rel"/examples/bench_ingest 20000
if [ -n "$base" ]; then
  echo "### baseline"
  "$base"/examples/bench_ingest 20000
fi
both bench_delivery 20000 300

# The daemon's resident memory after 30 s idle (API and UI on, nothing to do).
idle_rss() {
  local bin=$1 dir pid kb
  dir=$(mktemp -d)
  SESSIONPIPE_STATE_DIR=$dir/state HOME=$dir "$bin/sessionpipe" daemon >/dev/null 2>&1 &
  pid=$!
  sleep 30
  kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  awk -v k="$kb" 'BEGIN {printf "%.1f MB", k / 1024}'
}
echo
# Control's round trip on loopback (this build only: earlier builds have no control).
echo
"$rel"/examples/bench_control "$rel/sessionpipe-hook" "$rel/sessionpipe" 200
# A signed start through control against the same `claude -p` by hand, when
# Claude Code is installed under e2e/ (`npm ci --prefix e2e`).
claude=e2e/node_modules/@anthropic-ai/claude-code-linux-x64/claude
if [ -x "$claude" ]; then
  echo
  "$rel"/examples/bench_start "$rel/sessionpipe-hook" "$rel/sessionpipe" "$claude" 20
fi
# A signed start over ACP against the same agent driven by a minimal JSON-RPC
# client, and the daemon's memory with 10 idle ACP sessions held (this build
# only: earlier builds have no ACP rung).
echo
"$rel"/examples/bench_acp "$rel/sessionpipe-hook" "$rel/sessionpipe" "$rel/acp-test-agent" 50
# The account pool's proxy against a straight fetch from the same loopback
# upstream, interleaved; 100 at once; RSS over 10 000 requests (the
# baseline's too when it has the bench: builds from before issue 16 do not).
echo
[ -n "$base" ] && echo "### this build"
"$rel"/examples/bench_proxy 1000
if [ -x "$base/examples/bench_proxy" ]; then
  echo "### baseline"
  "$base"/examples/bench_proxy 1000
fi
# Retention: a pass over 100 000 events, 60 % past the window, with appends
# beside it against appends alone; the incremental vacuum (this build only).
echo
"$rel"/examples/bench_retention 100000
# A year of heavy use (20 000 sessions, 3 million events, 1 GB of Claude Code
# and Codex transcripts) against a fresh install: the board, a timeline, tail
# -n 100, start-up and memory, backfill, a retention pass (this build only).
# The year is generated once into $BENCH_YEAR_DIR (default target/bench-year;
# about 3 minutes and 8 GB) and kept; the retention pass works on a copy, so
# about 15 GB free are needed.
echo
"$rel"/examples/bench_year "$rel/sessionpipe-hook" "$rel/sessionpipe" 100
# `sessionpipe usage --since 365d` over bench_year's 20 000 sessions' model
# responses against a fresh install's 100 (generated once into
# $BENCH_USAGE_DIR, default target/bench-usage; this build only).
echo
"$rel"/examples/bench_usage "$rel/sessionpipe" 30
echo
echo "\`sessionpipe daemon\` resident memory after 30 s idle: $(idle_rss "$rel")${base:+ (baseline: $(idle_rss "$base"))}"
