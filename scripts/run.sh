#!/usr/bin/env bash
# Sets sessionpipe up on this machine and runs its main job: builds the release
# binaries, copies them to a stable folder ($SESSIONPIPE_BIN_DIR, default
# ~/.local/bin, so the hooks keep working whatever happens to this checkout),
# installs hooks for every harness found, starts the daemon if none runs, and
# follows the events. Usage: scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir="${SESSIONPIPE_BIN_DIR:-$HOME/.local/bin}"

cargo build --release --quiet -p sessionpipe-core -p sessionpipe-hook
mkdir -p "$bin_dir"
install -m 0755 target/release/sessionpipe target/release/sessionpipe-hook "$bin_dir/"
sp="$bin_dir/sessionpipe"

"$sp" install || true   # a skipped file is reported, and the rest still runs
if ! "$sp" status --json | grep -q '"mode": "daemon"'; then
  nohup "$sp" daemon >/dev/null 2>&1 &
  echo "daemon started (pid $!)"
fi
echo "following events (Ctrl-C stops following; the daemon keeps running)"
exec "$sp" tail
