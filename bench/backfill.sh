#!/usr/bin/env bash
# Backfill with two builds, run by run in turn on the same machine state:
# `sessionpipe backfill --days 30 --json` of one HOME into a new state dir
# each run, wall time and peak RSS (GNU time), the medians and their ratio.
# For issue 33's "backfilling usage within 1.2x of backfill's time": the HOME
# is bench_year's year of transcripts (`$BENCH_YEAR_DIR/year/home`, 954 MiB of
# Claude Code and Codex transcripts, made by `bench/run.sh`'s bench_year).
#
# Usage: bench/backfill.sh HOME BASELINE_SESSIONPIPE SESSIONPIPE [RUNS]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 HOME BASELINE_SESSIONPIPE SESSIONPIPE [RUNS]" >&2; exit 2; }
home=$1 baseline=$2 build=$3 runs=${4:-5}
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$runs"); do
  for which in baseline build; do
    rm -rf "$work/state"
    mkdir -m 700 "$work/state"
    /usr/bin/time -f "$which %e %M" -a -o "$work/times" \
      env -i HOME="$home" SESSIONPIPE_STATE_DIR="$work/state" SESSIONPIPE_SECRETS=file PATH="$PATH" \
      "${!which}" backfill --days 30 --json >"$work/$which.json"
  done
  echo "run $i: $(tail -n 2 "$work/times" | tr '\n' ' ')(load $(cut -d' ' -f1 /proc/loadavg))"
done
/usr/bin/python3 - "$work/times" "$work/baseline.json" "$work/build.json" <<'PY'
import json, statistics, sys
times = {}
for line in open(sys.argv[1]):
    which, secs, kb = line.split()
    times.setdefault(which, []).append((float(secs), int(kb)))
added = [sum(c.get("added", 0) for c in json.load(open(f))) for f in sys.argv[2:4]]
med = {w: statistics.median(s for s, _ in v) for w, v in times.items()}
peak = {w: max(k for _, k in v) / 1024 for w, v in times.items()}
print(f"baseline: p50 {med['baseline']:.2f} s, peak {peak['baseline']:.1f} MB, {added[0]} sessions added")
print(f"build:    p50 {med['build']:.2f} s, peak {peak['build']:.1f} MB, {added[1]} sessions added")
print(f"build / baseline: x{med['build'] / med['baseline']:.2f}")
PY
