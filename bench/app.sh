#!/usr/bin/env bash
# The tray app's benchmarks for BENCHMARKS.md, on a headless desktop (Xvfb, a
# D-Bus session, the test's StatusNotifierWatcher, dunst), release builds,
# temporary HOME and state dirs:
#   - start-up to tray: process start -> the tray item registered with the
#     watcher (RUNS launches, `--hidden`, a fresh state dir each);
#   - idle resident memory (ps RSS, and PSS from smaps_rollup) after IDLE_SECS:
#     the app started hidden (window never opened), the app whose window was
#     opened on the UI and then closed, and `sessionpipe daemon` alone.
#     WebKit's helper processes are reported beside the app's own RSS.
# Targets: the app < 50 MB, the daemon < 20 MB.
# Usage: bench/app.sh [RUNS] [IDLE_SECS]   (defaults 10 and 60; binaries from
# $SESSIONPIPE_BIN_DIR, default target/release as installers/build-deb.sh leaves it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DESKTOP_PY=$root/src-tauri/tests/desktop.py
# shellcheck source=../src-tauri/tests/lib.sh
source "$root/src-tauri/tests/lib.sh"

if [ "${1:-}" != "--inner" ]; then
  runs=${1:-10}
  idle=${2:-60}
  bin=${SESSIONPIPE_BIN_DIR:-${CARGO_TARGET_DIR:-$root/target}/release}
  need_desktop || exit 1
  for b in sessionpipe-app sessionpipe-window sessionpipe sessionpipe-hook; do
    [ -x "$bin/$b" ] || { echo "missing $bin/$b: run installers/build-deb.sh (a release build with Tauri's custom protocol)" >&2; exit 1; }
  done
  if [ -f "$bin/../share/sessionpipe/ui/index.html" ]; then
    ui_dir=""
  else
    ui_dir=$root/ui/dist
    [ -f "$ui_dir/index.html" ] || { echo "missing ui/dist: (npm ci && npm run build at the repo root)" >&2; exit 1; }
  fi
  work=$(mktemp -d /tmp/sp-app-bench.XXXXXX)
  start_x "$work/xvfb.log"
  trap 'kill "$XVFB_PID" 2>/dev/null || true; rm -rf "$work"' EXIT
  export SP_BIN=$bin SP_WORK=$work SP_UI_DIR=$ui_dir SP_RUNS=$runs SP_IDLE=$idle
  dbus-run-session -- "$0" --inner 3>&2 2>"$work/dbus.log"
  exit $?
fi

exec 2>&3 3>&-
W=$SP_WORK
export NO_AT_BRIDGE=1 GDK_BACKEND=x11
unset XDG_STATE_HOME SESSIONPIPE_HOOK_BIN SESSIONPIPE_UI_DIR
[ -n "$SP_UI_DIR" ] && export SESSIONPIPE_UI_DIR=$SP_UI_DIR
pids=()
trap 'for p in "${pids[@]}" ${MONITOR_PID:-} ${DUNST_PID:-} ${SNI_PID:-}; do kill "$p" 2>/dev/null || true; done' EXIT
start_desktop "$W"

fresh() { # a new HOME and state dir
  export HOME=$W/home-$1 SESSIONPIPE_STATE_DIR=$W/state-$1 XDG_CONFIG_HOME=$W/home-$1/.config
  mkdir -p "$HOME"
}
stop() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
pss_kb() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"; }
children() { pgrep -P "$1" || true; }
report() { # LABEL PID
  local label=$1 pid=$2 kids="" total
  total=$(rss_kb "$pid")
  for c in $(children "$pid"); do
    kids+=" $(tr '\0' ' ' <"/proc/$c/cmdline" | awk '{print $1}' | xargs basename) $(mb "$(rss_kb "$c")") MB;"
    total=$((total + $(rss_kb "$c")))
  done
  printf '| %s | %s MB | %s MB | %s |\n' "$label" "$(mb "$(rss_kb "$pid")")" "$(mb "$(pss_kb "$pid")")" \
    "${kids:- none}"
}

echo "## sessionpipe-app: start-up to tray and idle memory"
echo
echo "$(date -u +%Y-%m-%dT%H:%MZ) on $(uname -srm), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);"
echo "binaries: $SP_BIN (app $(stat -c %s "$SP_BIN/sessionpipe-app") bytes)"
echo

echo "### start-up to tray ($SP_RUNS launches, --hidden, fresh state each)"
echo
times=()
for i in $(seq "$SP_RUNS"); do
  fresh "start-$i"
  t0=$(now_ms)
  "$SP_BIN/sessionpipe-app" --hidden >"$W/app-start-$i.log" 2>&1 &
  app=$!
  pids+=("$app")
  wait_for 30 "the tray item" tray_item_of "$app" "$W/watch.log"
  name=$(tray_item_of "$app" "$W/watch.log" | cut -d' ' -f1)
  t_reg=$(awk -v n="$name" '$1 == "registered" && $3 == n {print $2; exit}' "$W/watch.log")
  times+=($((t_reg - t0)))
  stop "$app"
done
median_of() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(median_of <<<"$sorted")
# The baseline, same run: the same binary loading its libraries (GTK, WebKit)
# and exiting (`--version`), what any start of this program costs.
base=()
for _ in $(seq "$SP_RUNS"); do
  t0=$(now_ms)
  "$SP_BIN/sessionpipe-app" --version >/dev/null
  base+=($(($(now_ms) - t0)))
done
base_median=$(printf '%s\n' "${base[@]}" | median_of)
echo "process start -> StatusNotifierItem registered: median ${median} ms, min $(head -n 1 <<<"$sorted") ms, max $(tail -n 1 <<<"$sorted") ms (each: ${times[*]})"
echo "baseline, \`sessionpipe-app --version\` (load and exit): median ${base_median} ms; ratio $(awk -v a="$median" -v b="$base_median" 'BEGIN {printf "%.1f", a / (b > 0 ? b : 1)}')x"
echo

echo "### idle resident memory after ${SP_IDLE} s"
echo
echo "| process | RSS | PSS | child processes (RSS) |"
echo "|---|---|---|---|"

fresh hidden
"$SP_BIN/sessionpipe-app" --hidden >"$W/app-hidden.log" 2>&1 &
app=$!
pids+=("$app")
wait_for 30 "the tray item" tray_item_of "$app" "$W/watch.log"
sleep "$SP_IDLE"
report "sessionpipe-app, started hidden (window never opened)" "$app"
stop "$app"

fresh closed
"$SP_BIN/sessionpipe-app" >"$W/app-closed.log" 2>&1 &
app=$!
pids+=("$app")
window_id() { xdotool search --onlyvisible --name '^sessionpipe$' 2>/dev/null | head -n 1; }
window_open() { [ -n "$(window_id)" ]; }
window_closed() { [ -z "$(window_id)" ]; }
wait_for 30 "the window" window_open
sleep 5 # the UI loads and draws
/usr/bin/python3 "$DESKTOP_PY" close-window "$(window_id)"
wait_for 10 "the window to close" window_closed
sleep "$SP_IDLE"
report "sessionpipe-app, window opened on the UI then closed" "$app"
stop "$app"

fresh daemon
"$SP_BIN/sessionpipe" daemon >"$W/daemon.log" 2>&1 &
daemon=$!
pids+=("$daemon")
wait_for 15 "the daemon" test -f "$SESSIONPIPE_STATE_DIR/ui.json"
sleep "$SP_IDLE"
report "sessionpipe daemon (API and UI on)" "$daemon"
stop "$daemon"
echo
echo "targets: app < 50 MB, daemon < 20 MB (RSS)"
