# Shared by src-tauri/tests/xvfb.sh and bench/app.sh: a headless desktop for the
# app (Xvfb, a D-Bus session, a StatusNotifierWatcher, dunst) and small helpers.
# Sourced, not run. Installs nothing: a missing tool fails with its apt package.

# need TOOL:PACKAGE... : fails naming every missing tool and the package that has it.
need() {
  local missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair%%:*} (apt: ${pair#*:})")
  done
  if ((${#missing[@]})); then
    printf 'missing: %s\n' "${missing[@]}" >&2
    return 1
  fi
}

# The tools a headless desktop needs.
need_desktop() {
  need Xvfb:xvfb dbus-run-session:dbus-bin dbus-monitor:dbus-bin dbus-send:dbus-bin \
    dbus-update-activation-environment:dbus-bin dunst:dunst dunstctl:dunst \
    import:imagemagick compare:imagemagick xdotool:xdotool xwininfo:x11-utils \
    curl:curl || return 1
  if ! /usr/bin/python3 -c 'import gi; gi.require_version("Gio", "2.0")' 2>/dev/null; then
    echo "missing: /usr/bin/python3 with gi (apt: python3-gi)" >&2
    return 1
  fi
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] ||
    echo "note: fonts-dejavu-core is missing; screenshots may show boxes" >&2
}

now_ms() { date +%s%3N; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s.
wait_for() {
  local secs=$1 what=$2
  shift 2
  local until=$(($(now_ms) + secs * 1000))
  until "$@" >/dev/null 2>&1; do
    if (($(now_ms) > until)); then
      echo "timed out after ${secs}s waiting for: $what" >&2
      return 1
    fi
    sleep 0.1
  done
}

# start_x: an Xvfb on the first free display; sets DISPLAY and XVFB_PID.
start_x() {
  local n
  for n in $(seq 90 140); do
    [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] && continue
    Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >"${1:-/dev/null}" 2>&1 &
    XVFB_PID=$!
    export DISPLAY=":$n"
    if wait_for 10 "Xvfb on :$n" xdpyinfo_ok; then
      return 0
    fi
    kill "$XVFB_PID" 2>/dev/null || true
  done
  echo "no free X display" >&2
  return 1
}

xdpyinfo_ok() { xwininfo -root >/dev/null 2>&1; }

has_bus_name() {
  dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep 'boolean true' >/dev/null
}

bus_pid() {
  dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.GetConnectionUnixProcessID "string:$1" 2>/dev/null |
    awk '/uint32/{print $2}'
}

# start_desktop DIR [DUNSTRC]: inside a D-Bus session, the watcher (DIR/watch.log),
# dunst and a monitor of the notification interface (DIR/monitor.log). Sets
# SNI_PID, DUNST_PID, MONITOR_PID.
start_desktop() {
  local dir=$1 dunstrc=${2:-}
  dbus-update-activation-environment DISPLAY >/dev/null 2>&1
  /usr/bin/python3 "$DESKTOP_PY" watch >"$dir/watch.log" 2>&1 &
  SNI_PID=$!
  wait_for 10 "the StatusNotifierWatcher" has_bus_name org.kde.StatusNotifierWatcher
  dunst ${dunstrc:+-config "$dunstrc"} >"$dir/dunst.log" 2>&1 &
  DUNST_PID=$!
  wait_for 10 "dunst on the bus" has_bus_name org.freedesktop.Notifications
  dbus-monitor --session "type='method_call',interface='org.freedesktop.Notifications'" \
    "type='method_return'" >"$dir/monitor.log" 2>&1 &
  MONITOR_PID=$!
  sleep 0.3
}

# The tray item registered by PID, as "bus-name object-path" (empty when none).
tray_item_of() {
  local pid=$1 watch=$2 name path
  while read -r _ _ name path; do
    [ "$(bus_pid "$name")" = "$pid" ] && { echo "$name $path"; return 0; }
  done < <(grep '^registered ' "$watch" 2>/dev/null)
  return 1
}
