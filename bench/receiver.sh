#!/usr/bin/env bash
# The receiver's benchmarks in BENCHMARKS.md: events ingested per second on
# SQLite and PostgreSQL (batches of 50) against the same receiver answering 202
# unread, MACHINES machines long-polling one receiver process (memory, and a
# queued command's wake-up against one machine's), the page's first load,
# compressed, and the load and fault run at full scale (two processes on one
# PostgreSQL behind a balancer, 2 000 machines long-polling, one process
# SIGKILLed, PostgreSQL restarted: receiver/examples/load_fault/).
# Needs the page built (npm ci && npm run build at the repo root) and, for
# the PostgreSQL lines, Debian's postgresql package.
# With BASELINE (the release folder of an earlier build holding its
# sessionpipe-receiver), the ingest and the long-polls run for both builds in
# the same run, and say this build over the baseline; a MACHINES of 0 leaves
# the long-polls out (a build from before --max-connections cannot run them).
# Usage: bench/receiver.sh [BATCHES] [MACHINES] [BASELINE]
set -euo pipefail
cd "$(dirname "$0")/.."
batches="${1:-2000}"
machines="${2:-10000}"
base="${3:-}"
if [ -n "$base" ] && [ ! -x "$base/sessionpipe-receiver" ]; then
  echo "missing $base/sessionpipe-receiver" >&2
  exit 1
fi
# A connection is a file on both sides: the bench's client and the receivers
# it starts take the hard limit (MACHINES needs a little over MACHINES each).
ulimit -n "$(ulimit -Hn)"
# The bench arms the fault door and pairs through the test doors: a build with them.
cargo build --release -q -p sessionpipe-receiver --features test-doors --bins --examples
rel=${CARGO_TARGET_DIR:-target}/release
echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$rel"/examples/bench_receiver "$rel/sessionpipe-receiver" "$batches" "$machines" ${base:+"$base/sessionpipe-receiver"}
# The first load: index.html and what it links (the script and the style).
dist=receiver/page/dist
total=0
for f in "$dist/index.html" $(grep -o 'assets/[^"]*' "$dist/index.html" | sort -u | sed "s#^#$dist/#"); do
  n=$(gzip -9 -c "$f" | wc -c)
  total=$((total + n))
  echo "page: $(basename "$f") $(stat -c %s "$f") bytes, $n gzip"
done
echo "page first load: $total bytes gzip (the target is under 100 000)"
echo
# Exit 2: PostgreSQL is not installed (said in its one line).
"$rel"/examples/load_fault "$rel/sessionpipe-receiver" || [ $? -eq 2 ]
