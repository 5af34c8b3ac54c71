#!/usr/bin/env bash
# Sets sessionpipe up on this machine and runs its main job: builds the release
# binaries and the UI, copies them to stable folders ($SESSIONPIPE_BIN_DIR,
# default ~/.local/bin, and the UI beside it in ../share/sessionpipe/ui, so the
# hooks keep working whatever happens to this checkout), installs hooks for every
# harness found, then starts the tray app on a desktop (it runs the daemon) or the
# daemon alone elsewhere, prints the UI's link, and follows the events.
# Usage: scripts/run.sh        (scripts/test.sh installs the apt packages the app needs)
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir="${SESSIONPIPE_BIN_DIR:-$HOME/.local/bin}"
ui_dir="$bin_dir/../share/sessionpipe/ui"

target=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet -p sessionpipe-core -p sessionpipe-hook
mkdir -p "$bin_dir"
install -m 0755 "$target/release/sessionpipe" "$target/release/sessionpipe-hook" "$bin_dir/"
sp="$bin_dir/sessionpipe"

if command -v npm >/dev/null; then
  (cd ui && npm ci --no-audit --no-fund --loglevel=error --no-update-notifier && npm run build --silent) >/dev/null
  rm -rf "$ui_dir" && mkdir -p "$ui_dir" && cp -r ui/dist/. "$ui_dir/"
else
  echo "npm is missing: no UI (the daemon and the hooks work without it)" >&2
fi

"$sp" install || true   # a skipped file is reported, and the rest still runs

desktop=false
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && pkg-config --exists webkit2gtk-4.1 2>/dev/null; then
  desktop=true
fi
# Asked whole, then read: `status | grep -q` would close the pipe mid-output.
state=$("$sp" status --json 2>/dev/null || true)
if ! grep -q '"mode": "daemon"' <<<"$state"; then
  if $desktop; then
    # Tauri's custom protocol: the release app's own pages come from the binary.
    cargo build --release --quiet -p sessionpipe-app --features tauri/custom-protocol
    install -m 0755 "$target/release/sessionpipe-app" "$bin_dir/"
    nohup "$bin_dir/sessionpipe-app" --hidden >/dev/null 2>&1 &
    echo "tray app started (pid $!); it runs the daemon"
  else
    nohup "$sp" daemon >/dev/null 2>&1 &
    echo "daemon started (pid $!); no desktop here, so no tray"
  fi
fi
for _ in $(seq 50); do
  url=$("$sp" ui 2>/dev/null) && break
  sleep 0.1
done
[ -n "${url:-}" ] && echo "the UI: $url"
echo "following events (Ctrl-C stops following; the daemon keeps running)"
exec "$sp" tail
