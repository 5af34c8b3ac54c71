#!/usr/bin/env bash
# Builds release binaries and runs the benchmarks whose results are in
# BENCHMARKS.md: the hook against /bin/true, hook -> outbox latency, ingest
# throughput, delivery throughput and hook -> receiver latency.
# Usage: bench/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2000}"
cargo build --release -q -p sessionpipe-hook -p sessionpipe-core --bins --examples
rel=${CARGO_TARGET_DIR:-target}/release
hook=$rel/sessionpipe-hook
sp=$rel/sessionpipe
echo "## $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "hook binary: $(stat -c %s "$hook") bytes"
echo
"$rel"/examples/bench_hook "$hook" "$sp" "$runs"
echo
"$rel"/examples/bench_latency "$hook" "$sp" 500
echo
"$rel"/examples/bench_ingest 20000
echo
"$rel"/examples/bench_delivery "$hook" "$sp" 20000 300
