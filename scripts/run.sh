#!/usr/bin/env bash
# Sets sessionpipe up on this machine and runs its main job: builds the release
# binaries and the UI, copies them to stable folders ($SESSIONPIPE_BIN_DIR,
# default ~/.local/bin, and the UI beside it in ../share/sessionpipe/ui, so the
# hooks keep working whatever happens to this checkout), installs hooks for every
# harness found, then starts the tray app on a desktop (it runs the daemon), or
# elsewhere the daemon as a user service (`sessionpipe service install`: systemd
# --user, launchd), or where no service manager answers the daemon alone,
# detached; prints the UI's link and the three next things to try, and follows
# the events. It says what it is doing before each step that takes long.
# Usage: scripts/run.sh        (scripts/test.sh installs the apt packages the app needs)
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir="${SESSIONPIPE_BIN_DIR:-$HOME/.local/bin}"
ui_dir="$bin_dir/../share/sessionpipe/ui"

# say WHAT: the step about to run, on stderr (stdout stays the events').
say() { printf '\n==> %s\n' "$*" >&2; }
# Cargo's own progress where someone watches a terminal; quiet in a log.
cargo_progress=(--quiet)
[ -t 2 ] && cargo_progress=()

target=${CARGO_TARGET_DIR:-target}
if command -v cargo >/dev/null; then
  # Incremental: when the release binaries are up to date this only checks.
  if [ -x "$target/release/sessionpipe" ] && [ -x "$target/release/sessionpipe-hook" ]; then
    say "building sessionpipe (only what changed since the last build)"
  else
    say "building sessionpipe and its hook, release (about 10 minutes the first time on 2 cores)"
  fi
  cargo build --release "${cargo_progress[@]}" -p sessionpipe-core -p sessionpipe-hook
elif [ -x "$target/release/sessionpipe" ] && [ -x "$target/release/sessionpipe-hook" ]; then
  echo "cargo is missing: using the release binaries already in $target/release" >&2
else
  echo "cargo is missing and there are no release binaries in $target/release: install a Rust toolchain (1.89 or newer, https://rustup.rs), then run this again" >&2
  exit 1
fi
mkdir -p "$bin_dir"
install -m 0755 "$target/release/sessionpipe" "$target/release/sessionpipe-hook" "$bin_dir/"
sp="$bin_dir/sessionpipe"
echo "installed sessionpipe and sessionpipe-hook in $bin_dir" >&2

# The UI is the one part that needs Node: without it (or when its build
# fails) everything else still runs, and this says so.
ui_log=$(mktemp)
if ! command -v npm >/dev/null; then
  echo "npm is missing: no UI (the daemon and the hooks work without it; install Node 20 and npm, then run this again)" >&2
elif say "building the UI (npm ci and vite: about a minute the first time)" &&
  (npm ci --no-audit --no-fund --loglevel=error --no-update-notifier && npm run build --silent --workspace ui) >"$ui_log" 2>&1; then
  rm -rf "$ui_dir" && mkdir -p "$ui_dir" && cp -r ui/dist/. "$ui_dir/"
  echo "the UI is in $ui_dir" >&2
else
  echo "the UI did not build, so there is none this time (the daemon and the hooks work without it); npm said:" >&2
  tail -n 5 "$ui_log" >&2
fi
rm -f "$ui_log"

say "installing the hooks of the harnesses found here (sessionpipe install)"
"$sp" install || true   # a skipped file is reported, and the rest still runs

desktop=false
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && pkg-config --exists webkit2gtk-4.1 2>/dev/null; then
  desktop=true
fi
# Starts "$@" detached: a child of a process that exits at once (so not of
# this script, which becomes `tail` below, a parent that never reaps: a killed
# child would stay a zombie), in a session (setsid) or at least a process
# group (job control, where there is no setsid: macOS) of its own, out of the
# terminal's Ctrl-C.
detach() {
  if command -v setsid >/dev/null; then
    setsid -f "$@" </dev/null >/dev/null 2>&1
  else
    (set -m; nohup "$@" </dev/null >/dev/null 2>&1 &)
  fi
}
# Asked whole, then read: `status | grep -q` would close the pipe mid-output.
state=$("$sp" status --json 2>/dev/null || true)
if ! grep -q '"mode": "daemon"' <<<"$state"; then
  if $desktop; then
    # Tauri's custom protocol: the release app's own pages come from the binary.
    if [ -x "$target/release/sessionpipe-app" ]; then
      say "building the tray app (only what changed since the last build)"
    else
      say "building the tray app, release (about 10 minutes more the first time on 2 cores)"
    fi
    cargo build --release "${cargo_progress[@]}" -p sessionpipe-app --features tauri/custom-protocol
    install -m 0755 "$target/release/sessionpipe-app" "$bin_dir/"
    detach "$bin_dir/sessionpipe-app" --hidden
    echo "tray app started; it runs the daemon"
  elif say "no desktop here: starting the daemon as a user service (sessionpipe service install)" &&
    "$sp" service install; then
    echo "the daemon runs as a user service (\`sessionpipe service status\`); no desktop here, so no tray"
  else
    detach "$sp" daemon
    echo "daemon started on its own (no service manager answers here; it stops at the next reboot)"
  fi
fi
for _ in $(seq 50); do
  url=$("$sp" ui 2>/dev/null) && break
  sleep 0.1
done
[ -n "${url:-}" ] && echo "the UI: $url"
if $desktop; then
  open_hint=' (or "Open sessionpipe" in the tray'"'"'s menu)'
  pair_hint='check "Phone page on this computer" in the tray'"'"'s menu, make an account
     with a passkey on the page it opens, then run: '"$sp"' connect http://localhost:47474'
else
  open_hint=""
  pair_hint='run a receiver of your own (docs/src/phone.md), make an account with a
     passkey on its page, then run: '"$sp"' connect <its address>'
fi
cat <<NEXT

Three things to try next:
  1. Open the UI: $sp ui --open$open_hint
  2. Pair a phone: $pair_hint
  3. Ask the doctor what is missing: $sp doctor

NEXT
echo "following events (Ctrl-C stops following; the daemon keeps running)"
exec "$sp" tail
