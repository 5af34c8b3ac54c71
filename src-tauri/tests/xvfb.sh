#!/usr/bin/env bash
# The tray app on a headless desktop: Xvfb, a D-Bus session (dbus-run-session), a
# StatusNotifierWatcher (desktop.py), dunst and dbus-monitor. With a temporary
# HOME and state dir, it proves that:
#   1. the app starts, embeds the daemon, and its tray item registers with the
#      watcher (start-up time printed); the menu and the idle icon are right;
#   2. its window shows the daemon's UI (screenshot in test-artifacts/app/);
#   3. a real `sessionpipe-hook claude-code PermissionRequest` makes a Notify call
#      on the bus with the expected summary and body; the icon turns to "needs
#      you" and the menu lists the session first;
#   4. closing the window leaves the tray; clicking the notification (dunstctl
#      action) opens the window again, on the session;
#   5. the session's next hook event withdraws its notification (CloseNotification);
#   6. "Pause notifications" in the menu writes config.json and silences notices;
#   7. "Open at login" writes and removes the autostart entry;
#   8. "Phone page on this computer" serves the receiver and its page on
#      loopback with open pairing, and stops it again;
#   9. a second launch exits and opens the first one's window;
#  10. "Quit" ends the app; started beside a running `sessionpipe daemon` it
#      attaches (its notices still come), and takes over when that daemon dies;
#  11. local approvals on: the real Claude Code (e2e/node_modules, offline against
#      a scripted Messages API in desktop.py) asks to run a command; its
#      PermissionRequest waits on the daemon, the notification carries Allow and
#      Deny and says which harness, session, folder and command; Allow chosen
#      through dunst (`dunstctl context`, dunstrc's dmenu) runs the real tool and
#      the notification goes;
#  12. two sessions' prompts at once are both listed in the tray menu, with what
#      each will run (the menu drawn as a panel shows it: tray-menu-approval.png);
#      the menu's Allow runs one tool, its Deny refuses the other (the model is
#      told so);
#  13. the window on a waiting prompt (the menu's line opens it on the session)
#      shows Allow and Deny; the page's Allow (the same page, in Chromium through
#      playwright-core from the npm workspace) runs the tool and says so;
#  14. a waiting prompt answered in the terminal (its session's next hook event)
#      withdraws its notification, Allow and all, and leaves the menu;
#  15. the account pool (a fake sign-in imported, its upstream a loopback server
#      through the test-only SESSIONPIPE_ANTHROPIC_API): a request of a hooked
#      session through the pool's listener, answered at 95 % of the five-hour
#      window, makes a Notify "Claude Code is near a usage limit" naming the
#      window, the account and the reset; a second answer at 97 % of the same
#      window and reset notifies no more; `pool off` gives the settings back;
#      The tray's menu then has today's usage line, its tokens as `sessionpipe
#      usage` counts them and the five-hour window at 97 %;
#  16. a real `sessionpipe backfill` of 8000 small Claude Code transcripts
#      shows in the tray's menu while it runs (the core's words, "Backfilling
#      1 200 / 8 000 sessions"), and the line goes when it ends;
#  17. Droid and Kiro appearing after setup (their folders made) are offered
#      in the menu; "Watch Droid" installs Droid's hooks (status says
#      installed), "Don't offer Kiro again" declines Kiro without touching
#      its files, and the lines go;
#  18. SIGTERM and SIGINT end the app as Quit does: SIGTERM to an app whose
#      embedded daemon is working through a backlog of 2000 hook jobs, SIGINT
#      to one with its window open; each exits 0 within 2.5 s (the app waits
#      up to 2 s for its daemon), its daemon says "stopping" and does not
#      start again, removes ui.json and its sockets (a killed one leaves
#      ui.json), its tray item leaves the watcher, its window's processes end;
#      the backlog is all in the outbox after the next start, once each.
# Installs nothing; a missing tool fails with the apt package to install.
# Usage: src-tauri/tests/xvfb.sh   (binaries from $SESSIONPIPE_BIN_DIR, default
# target/debug: cargo build -p sessionpipe-app -p sessionpipe-core -p sessionpipe-hook;
# the app is two programs, sessionpipe-app (the tray) and sessionpipe-window;
# screenshots to $SESSIONPIPE_APP_ARTIFACTS, default test-artifacts/app)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
DESKTOP_PY=$here/desktop.py
# shellcheck source=lib.sh
source "$here/lib.sh"

if [ "${1:-}" != "--inner" ]; then
  bin=${SESSIONPIPE_BIN_DIR:-${CARGO_TARGET_DIR:-$root/target}/debug}
  need_desktop || exit 1
  for b in sessionpipe-app sessionpipe-window sessionpipe sessionpipe-hook; do
    if [ ! -x "$bin/$b" ]; then
      echo "missing $bin/$b: cargo build -p sessionpipe-app -p sessionpipe-core -p sessionpipe-hook" >&2
      exit 1
    fi
  done
  # An installed app serves its own UI (<bin>/../share/sessionpipe/ui); a build
  # tree's serves ui/dist.
  if [ -f "$bin/../share/sessionpipe/ui/index.html" ]; then
    ui_dir=""
  elif [ -f "$root/ui/dist/index.html" ]; then
    ui_dir=$root/ui/dist
  else
    echo "missing ui/dist: npm ci && npm run build (at the repo root)" >&2
    exit 1
  fi
  work=$(mktemp -d /tmp/sp-app-test.XXXXXX)
  artifacts=${SESSIONPIPE_APP_ARTIFACTS:-$root/test-artifacts/app}
  mkdir -p "$artifacts"
  start_x "$work/xvfb.log"
  trap 'kill "$XVFB_PID" 2>/dev/null || true' EXIT
  export SP_BIN=$bin SP_WORK=$work SP_ARTIFACTS=$artifacts SP_UI_DIR=$ui_dir
  # dbus-daemon's chatter goes to a file; the test's own stderr stays (fd 3).
  if dbus-run-session -- "$0" --inner 3>&2 2>"$work/dbus.log"; then
    rm -rf "$work"
    exit 0
  fi
  echo "FAILED; logs in $work (also copied to $artifacts/logs)" >&2
  mkdir -p "$artifacts/logs"
  cp "$work"/*.log "$artifacts/logs/" 2>/dev/null || true
  for f in app.log watch.log; do
    [ -f "$work/$f" ] && { echo "--- $f (last lines)" >&2; tail -n 20 "$work/$f" >&2; }
  done
  exit 1
fi

# ---- inside the D-Bus session ----
exec 2>&3 3>&-
W=$SP_WORK
A=$SP_ARTIFACTS
export HOME=$W/home SESSIONPIPE_STATE_DIR=$W/state
export XDG_CONFIG_HOME=$W/home/.config NO_AT_BRIDGE=1 GDK_BACKEND=x11
unset XDG_STATE_HOME SESSIONPIPE_HOOK_BIN SESSIONPIPE_UI_DIR
[ -n "$SP_UI_DIR" ] && export SESSIONPIPE_UI_DIR=$SP_UI_DIR
STATE=$SESSIONPIPE_STATE_DIR
PROJECT=$HOME/work/project
mkdir -p "$PROJECT" "$HOME/.claude"
# What the app opens in a browser (the phone page) is written down, not shown.
mkdir -p "$W/bin"
printf '#!/bin/sh\necho "$@" >>"%s/opened.log"\n' "$W" >"$W/bin/xdg-open"
chmod +x "$W/bin/xdg-open"
export PATH=$W/bin:$PATH
# dunst's context menu (`dunstctl context`) pipes every action of the
# notifications on screen to its dmenu, one line each ("#Allow (summary)
# [id,allow]"); the test's dmenu picks the line named in $W/pick.
cat >"$W/dmenu.sh" <<EOF
#!/bin/sh
menu=\$(cat)
printf '%s\n' "\$menu" >>"$W/context.log"
printf '%s\n' "\$menu" | grep -F -m 1 -- "\$(cat "$W/pick")"
EOF
chmod +x "$W/dmenu.sh"
cat >"$W/dunstrc" <<EOF
[global]
    font = DejaVu Sans 10
    dmenu = $W/dmenu.sh
[urgency_low]
    timeout = 0
[urgency_normal]
    timeout = 0
[urgency_critical]
    timeout = 0
EOF

pids=()
cleanup() {
  for p in "${pids[@]}" ${MONITOR_PID:-} ${DUNST_PID:-} ${SNI_PID:-}; do
    kill "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  # An app that ended on its own says how (its exit code, or 128 + the signal).
  if [ -n "${APP:-}" ] && ! kill -0 "$APP" 2>/dev/null; then
    local code=0
    wait "$APP" || code=$?
    printf 'the app (pid %s) had ended: exit status %s\n' "$APP" "$code" >&2
  fi
  exit 1
}

# --- helpers over the desktop ---
menu() { /usr/bin/python3 "$DESKTOP_PY" menu $ITEM; }
menu_has() { [[ "$(menu)" == *"$1"* ]]; }
menu_id() { menu | awk -F'\t' -v l="$1" 'index($3, l) == 1 {print $1; exit}'; }
# click LABEL: as a panel does; the tray rebuilds its menu when sessions come or
# go (new item ids), so a click on an id that just went away is tried again.
click() {
  local i
  for i in 1 2 3 4 5; do
    /usr/bin/python3 "$DESKTOP_PY" click $ITEM "$(menu_id "$1")" 2>/dev/null && return 0
    sleep 0.5
  done
  fail "cannot click \"$1\" in the menu: $(menu)"
}
notices() { /usr/bin/python3 "$DESKTOP_PY" notices "$W/monitor.log"; }
notify_count() { notices | grep -c '"notify"' || true; }
notice_with() { notices | grep -F '"notify"' | grep -F -- "$1" | tail -n 1; }
has_notice() { [ -n "$(notice_with "$1")" ]; }
window_id() { xdotool search --onlyvisible --name '^sessionpipe$' 2>/dev/null | head -n 1; }
window_open() { [ -n "$(window_id)" ]; }
window_closed() { [ -z "$(window_id)" ]; }
window_pids() { # the window's process (the tray's child) and WebKit's under it
  local w
  for w in $(pgrep -P "$APP" || true); do
    echo "$w"
    pgrep -P "$w" || true
  done
}
gone() { for p in "$@"; do ! kill -0 "$p" 2>/dev/null || return 1; done; }
opened_on() { [ "$(grep -c "the window opens on $1" "$W/app.log")" -ge "$2" ]; }
lock_held_by() { grep -q "^$1 daemon" "$STATE/daemon.lock" 2>/dev/null; }
icon_is() {
  local file
  file=$(/usr/bin/python3 "$DESKTOP_PY" icon $ITEM)
  [ -f "$file" ] && [ "$(compare -metric AE "$file" "$root/src-tauri/icons/tray/$1.png" null: 2>&1)" = 0 ]
}
json_field() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
config_says() { grep -q "\"$1\": $2" "$STATE/config.json" 2>/dev/null; }
shot() {
  sleep 1.5 # the page's first paint
  import -window root "$A/$1"
  ok "screenshot $A/$1"
}
start_app() { # LOG ARGS...
  local log=$1
  shift
  "$SP_BIN/sessionpipe-app" "$@" >"$W/$log" 2>&1 &
  APP=$!
  pids+=("$APP")
}
find_item() {
  wait_for 30 "the tray item of pid $APP" tray_item_of "$APP" "$W/watch.log"
  ITEM=$(tray_item_of "$APP" "$W/watch.log")
}
# hook EVENT SESSION JSON-FIELDS: runs the real hook with a Claude-Code-shaped payload.
hook() {
  local event=$1 session=$2 fields=$3
  local payload="{\"session_id\":\"$session\",\"transcript_path\":\"$HOME/.claude/projects/-work-project/$session.jsonl\",\"cwd\":\"$PROJECT\",\"permission_mode\":\"default\",\"hook_event_name\":\"$event\",$fields}"
  (cd "$PROJECT" && printf '%s\n' "$payload" | CLAUDE_PROJECT_DIR=$PROJECT "$SP_BIN/sessionpipe-hook" claude-code "$event")
}
permission() { # SESSION COMMAND
  hook PermissionRequest "$1" "\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"$2\",\"description\":\"Run $2\"}"
}
tool_done() { # SESSION COMMAND
  hook PostToolUse "$1" "\"tool_name\":\"Bash\",\"tool_use_id\":\"toolu_$1\",\"tool_input\":{\"command\":\"$2\"},\"tool_response\":{\"stdout\":\"\",\"stderr\":\"\",\"interrupted\":false}"
}
CLAUDE=$root/e2e/node_modules/@anthropic-ai/claude-code-linux-x64/claude
# claude_run NAME DIR COMMAND: the real Claude Code, offline, in DIR, in the
# background (sets CLAUDE_PID): a scripted Messages API asks for one Bash call
# running COMMAND, then says "Done."; permission mode default, so Claude Code
# asks, and its PermissionRequest hook waits on the daemon (local approvals).
claude_run() {
  local name=$1 dir=$2 command=$3
  mkdir -p "$dir"
  /usr/bin/python3 "$DESKTOP_PY" messages-api "$W/$name.port" "$command" 2>"$W/$name-api.log" &
  pids+=("$!")
  wait_for 10 "the scripted Messages API of $name" test -s "$W/$name.port"
  (cd "$dir" && exec env -i HOME="$HOME" SESSIONPIPE_STATE_DIR="$STATE" LANG=C.UTF-8 \
    NO_COLOR=1 SHELL=/bin/bash PATH="$(dirname "$CLAUDE"):/usr/bin:/bin" \
    ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$W/$name.port")" \
    ANTHROPIC_API_KEY=sk-test-not-a-key CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    "$CLAUDE" -p "Make the file." --permission-mode default --output-format json \
    </dev/null >"$W/$name.out" 2>"$W/$name.err") &
  CLAUDE_PID=$!
  pids+=("$CLAUDE_PID")
}
# finished NAME PID: Claude Code's run ended well (exit 0, a result).
finished() {
  local code=0
  wait "$2" || code=$?
  [ "$code" = 0 ] || fail "claude ($1) exited $code: $(cat "$W/$1.out" "$W/$1.err")"
  [ "$(json_field "$(cat "$W/$1.out")" is_error)" = False ] || fail "claude ($1): $(cat "$W/$1.out")"
}
# The latest Notify whose text has $1 and that carries Allow and Deny.
answerable_notice() { notices | grep -F '"notify"' | grep -F -- "$1" | grep -F '"allow", "Allow", "deny", "Deny"' | tail -n 1; }
has_answerable_notice() { [ -n "$(answerable_notice "$1")" ]; }
in_dunst_history() { # ID: closed (by an action, a click or a close), so in dunst's history
  dunstctl history | /usr/bin/python3 -c 'import json,sys; ids=[n["id"]["data"] for g in json.load(sys.stdin)["data"] for n in g]; sys.exit(0 if int(sys.argv[1]) in ids else 1)' "$1"
}
# menu_after LINE LABEL: the id of the first item labelled LABEL after the item
# whose label has LINE (a prompt's Allow or Deny, after its command's line).
menu_after() {
  menu | awk -F'\t' -v line="$1" -v label="$2" 'seen && $3 == label {print $1; exit} index($3, line) {seen = 1}'
}
click_after() { # LINE LABEL
  local i id
  for i in 1 2 3 4 5; do
    id=$(menu_after "$1" "$2")
    [ -n "$id" ] && /usr/bin/python3 "$DESKTOP_PY" click $ITEM "$id" 2>/dev/null && return 0
    sleep 0.5
  done
  fail "cannot click \"$2\" after \"$1\" in the menu: $(menu)"
}

# Notifications stay until acted on (dunstrc above), so the test can click one.
start_desktop "$W" "$W/dunstrc"

S1=5e0c1a52-1111-4c1e-9d7a-000000000001
S2=5e0c1a52-2222-4c1e-9d7a-000000000002
S3=5e0c1a52-3333-4c1e-9d7a-000000000003
S4=5e0c1a52-4444-4c1e-9d7a-000000000004

step "1. the app starts, embeds the daemon, and its tray registers"
t0=$(now_ms)
start_app app.log
find_item
t_reg=$(awk -v n="${ITEM%% *}" '$1 == "registered" && $3 == n {print $2; exit}' "$W/watch.log")
ok "tray item $ITEM registered $((t_reg - t0)) ms after the app started ($SP_BIN)"
wait_for 15 "the embedded daemon to hold the lock" lock_held_by "$APP"
ok "the embedded daemon holds the lock (pid $APP)"
# Every file the app leaves in the state dir is private from its first byte.
[ "$(stat -c %a "$STATE/app.lock")" = 600 ] || fail "app.lock is $(stat -c %a "$STATE/app.lock")"
! grep -q "made private" "$W/app.log" || fail "the app's daemon had to make a file private: $(grep "made private" "$W/app.log")"
ok "app.lock is 0600 and nothing needed making private"
wait_for 10 "the menu" menu_has "No live sessions"
for line in "Pause notifications" "Open at login" "Open sessionpipe" "Quit"; do
  menu_has "$line" || fail "the menu has no \"$line\": $(menu)"
done
icon_is idle || fail "the icon is not the idle one"
ok "menu: no live sessions, Pause notifications, Open at login, Open sessionpipe, Quit; idle icon"

step "2. the window shows the daemon's UI"
wait_for 20 "the window" window_open
ui_url=$(json_field "$(cat "$STATE/ui.json")" url)
[[ "$(curl -fsS "$ui_url/")" == *"<html"* ]] || fail "the daemon serves no UI at $ui_url"
shot window.png

step "3. a real attention.needed makes a Notify call on the bus"
permission "$S1" "touch made-by-test.txt"
wait_for 20 "a Notify call for the permission request" has_notice '"summary": "Claude Code wants to run Bash"'
line=$(notice_with '"summary": "Claude Code wants to run Bash"')
echo "Notify: $line"
body=$(json_field "$line" body)
[ "$(json_field "$line" app)" = sessionpipe ] || fail "app name: $line"
case "$body" in
  "Bash touch made-by-test.txt"$'\n'*work/project) ;;
  *) fail "unexpected body: $body" ;;
esac
[[ "$(json_field "$line" actions)" == *"'default'"* ]] || fail "no default action: $line"
N1=$(json_field "$line" notify)
ok "Notify id $N1: summary \"Claude Code wants to run Bash\", body \"${body//$'\n'/\\n}\", default action"
wait_for 10 "the session in the menu" menu_has "Claude Code · project · needs you"
wait_for 10 "the needs-you icon" icon_is needs-you
ok "the icon shows needs-you; the menu lists: $(menu | grep -F 'Claude Code ·' | cut -f3 | head -n 1)"
shot window-needs-you.png

step "4. closing the window leaves the tray; clicking the notification opens the window on the session"
procs=$(window_pids | xargs)
[ -n "$procs" ] || fail "no window process under the app"
/usr/bin/python3 "$DESKTOP_PY" close-window "$(window_id)"
wait_for 10 "the window to close" window_closed
# shellcheck disable=SC2086
wait_for 10 "the window's processes ($procs) to end" gone $procs
kill -0 "$APP" || fail "the app exited when its window closed"
menu_has "Quit" || fail "the tray is gone after the window closed"
ok "window closed: its processes ($procs: the window, WebKit's) ended; app and tray still running"
dunstctl action 0
wait_for 15 "the window to open from the notification" window_open
opened_on "claude-code:$S1" 1 || fail "the window did not open on the session: $(tail -n 3 "$W/app.log")"
ok "clicking the notification opened the window on claude-code:$S1"
shot window-session.png
/usr/bin/python3 "$DESKTOP_PY" close-window "$(window_id)"
wait_for 10 "the window to close" window_closed
click "Claude Code · project · needs you"
wait_for 15 "the window to open from the menu" window_open
opened_on "claude-code:$S1" 2 || fail "the menu did not open the window on the session"
ok "choosing the session in the menu opened the window on it"

step "5. the session's next hook event withdraws its notification"
permission "$S2" "rm -rf build"
wait_for 20 "the second Notify" has_notice 'rm -rf build'
N2=$(json_field "$(notice_with 'rm -rf build')" notify)
tool_done "$S2" "rm -rf build"
closed() { [[ $'\n'"$(notices)"$'\n' == *$'\n'"{\"close\": $1}"$'\n'* ]]; }
wait_for 20 "CloseNotification $N2" closed "$N2"
ok "Notify id $N2 withdrawn with CloseNotification($N2) when the attention cleared"

step "6. Pause notifications from the menu"
click "Pause notifications"
wait_for 10 "config.json to say paused" config_says notifications_paused true
checked() { [ "$(menu | awk -F'\t' -v l="$1" '$3 == l {print $2}')" = 1 ]; }
wait_for 10 "the check mark" checked "Pause notifications"
before=$(notify_count)
permission "$S3" "echo paused"
stored() { [[ "$("$SP_BIN/sessionpipe" tail --no-follow --json --session "$1")" == *attention.needed* ]]; }
wait_for 20 "the paused session's attention in the outbox" stored "$S3"
sleep 2 # the notices' thread looks every 0.3 s
[ "$(notify_count)" = "$before" ] || fail "a notification was shown while paused: $(notices | tail -n 1)"
click "Pause notifications"
wait_for 10 "config.json to say unpaused" config_says notifications_paused false
ok "paused: config.json notifications_paused true, checked in the menu, no Notify; unpaused again"

step "7. Open at login from the menu"
autostart=$XDG_CONFIG_HOME/autostart/sessionpipe.desktop
click "Open at login"
wait_for 10 "the autostart entry" test -f "$autostart"
grep -q '^Exec=.*sessionpipe-app.*--hidden' "$autostart" || fail "autostart entry: $(cat "$autostart")"
wait_for 10 "config.json open_at_login" config_says open_at_login true
ok "$(grep '^Exec=' "$autostart")"
click "Open at login"
wait_for 10 "the autostart entry to go" test ! -f "$autostart"
config_says open_at_login false || fail "open_at_login still true"
ok "turned off: the entry is gone, open_at_login false"

step "8. Phone page on this computer: the receiver with its page on loopback, open pairing, off again"
PHONE_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
/usr/bin/python3 - "$STATE/config.json" "$PHONE_PORT" <<'PY'
import json, os, sys
path, port = sys.argv[1], int(sys.argv[2])
doc = json.load(open(path)) if os.path.exists(path) else {}
doc["local_receiver_port"] = port
json.dump(doc, open(path, "w"), indent=2)
PY
click "Phone page on this computer"
wait_for 10 "config.json local_receiver" config_says local_receiver true
discovery() { curl -sf --max-time 2 "http://127.0.0.1:$PHONE_PORT/.well-known/sessionpipe"; }
wait_for 15 "the local receiver to answer" discovery
[[ "$(discovery)" == *'"open_pairing":true'* ]] || fail "no open pairing: $(discovery)"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PHONE_PORT/")" = 200 ] || fail "the page is not served"
[ "$(stat -c %a "$STATE/receiver")" = 700 ] || fail "the receiver's folder is $(stat -c %a "$STATE/receiver")"
[ "$(stat -c %a "$STATE/receiver/receiver.db")" = 600 ] || fail "its database is $(stat -c %a "$STATE/receiver/receiver.db")"
wait_for 10 "the browser to be asked for the page" grep -qx "http://localhost:$PHONE_PORT" "$W/opened.log"
wait_for 10 "the menu's line" menu_has "Open the phone page (http://localhost:$PHONE_PORT)"
ok "serving on 127.0.0.1:$PHONE_PORT with the page and open pairing; the page opened; 0700/0600"
click "Phone page on this computer"
wait_for 10 "config.json local_receiver off" config_says local_receiver false
port_closed() { ! discovery >/dev/null; }
wait_for 10 "the port to close" port_closed
no_line() { ! menu_has "Open the phone page"; }
wait_for 10 "the line to go" no_line
ok "turned off: the port is closed, the line gone; its database stays"

step "9. one instance: a second launch opens the first one's window and exits"
/usr/bin/python3 "$DESKTOP_PY" close-window "$(window_id)"
wait_for 10 "the window to close" window_closed
timeout 30 "$SP_BIN/sessionpipe-app" >"$W/second.log" 2>&1 || fail "the second launch failed ($?)"
wait_for 15 "the first app's window" window_open
# While GTK maps a window, X can show it twice for a moment; two real windows
# would stay two.
one_window() { [ "$(xdotool search --onlyvisible --name '^sessionpipe$' | wc -l)" = 1 ]; }
wait_for 5 "exactly one window" one_window
kill -0 "$APP" || fail "the first app is gone"
ok "the second launch exited 0; the first app opened its window"

step "10. Quit; then attach to a running sessionpipe daemon and take over when it dies"
procs=$(window_pids | xargs)
click "Quit"
wait_for 15 "the app to quit" bash -c "! kill -0 $APP 2>/dev/null"
# shellcheck disable=SC2086
wait_for 10 "the window's processes ($procs) to end" gone $procs
ok "Quit ended the app and its open window ($procs)"
"$SP_BIN/sessionpipe" daemon >"$W/daemon.log" 2>&1 &
DAEMON=$!
pids+=("$DAEMON")
wait_for 15 "sessionpipe daemon to hold the lock" lock_held_by "$DAEMON"
start_app app2.log --hidden
find_item
wait_for 15 "the attached line" menu_has "Attached to sessionpipe daemon (pid $DAEMON)"
ok "attached: $(menu | grep -F Attached | cut -f3)"
window_closed || fail "--hidden opened the window"
permission "$S4" "make attached"
wait_for 20 "a Notify through the attached daemon" has_notice 'make attached'
ok "the attached app notified: $(notice_with 'make attached')"
t_kill=$(now_ms)
kill "$DAEMON"
wait_for 20 "the app to take over the lock" lock_held_by "$APP"
t_took=$(now_ms)
not_attached() { ! menu_has Attached; }
wait_for 10 "the attached line to go" not_attached
tool_done "$S4" "make attached"
permission "$S4" "make embedded"
wait_for 20 "a Notify after the takeover" has_notice 'make embedded'
ok "took over $((t_took - t_kill)) ms after the daemon's end; notified: $(notice_with 'make embedded')"
click "Quit"
wait_for 15 "the app to quit" bash -c "! kill -0 $APP 2>/dev/null"

step "11. local approvals: a real Claude Code prompt's notification carries Allow; Allow through dunst runs the tool"
[ -x "$CLAUDE" ] || fail "missing the real Claude Code ($CLAUDE): (cd e2e && npm ci)"
PATH="$(dirname "$CLAUDE"):$PATH" "$SP_BIN/sessionpipe" install --harness claude-code >"$W/install.log" 2>&1 ||
  fail "sessionpipe install: $(cat "$W/install.log")"
"$SP_BIN/sessionpipe" control approvals on >/dev/null || fail "sessionpipe control approvals on"
config_says local_approvals true || fail "config.json does not say local_approvals: $(cat "$STATE/config.json")"
dunstctl close-all # the earlier steps' notifications: only this step's are on screen
start_app app3.log --hidden
find_item
wait_for 15 "the embedded daemon to hold the lock" lock_held_by "$APP"
claude_run alpha "$HOME/work/alpha" "touch made-by-allow.txt"
A_PID=$CLAUDE_PID
wait_for 60 "a Notify with Allow and Deny for the real prompt" has_answerable_notice 'made-by-allow.txt'
line=$(answerable_notice 'made-by-allow.txt')
echo "Notify: $line"
[ "$(json_field "$line" summary)" = "Claude Code wants to run Bash" ] || fail "summary: $line"
body=$(json_field "$line" body)
[[ "$body" == *"touch made-by-allow.txt"* && "$body" == *"work/alpha"* ]] || fail "the body does not say what will run and where: $body"
N=$(json_field "$line" notify)
[ -e "$HOME/work/alpha/made-by-allow.txt" ] && fail "the tool ran before anyone answered"
kill -0 "$A_PID" || fail "claude did not wait for the answer: $(cat "$W/alpha.out")"
ok "Notify id $N: \"Claude Code wants to run Bash\", body \"${body//$'\n'/\\n}\", actions $(json_field "$line" actions)"
echo "[$N,allow]" >"$W/pick"
dunstctl context # returns at once; dunst runs its dmenu in the background
context_has() { grep -F -- "$1" "$W/context.log"; }
wait_for 10 "dunst's context menu to offer Allow of $N" context_has "[$N,allow]" ||
  fail "dunst's context menu: $(cat "$W/context.log" 2>/dev/null)"
wait_for 30 "the allowed tool to run" test -e "$HOME/work/alpha/made-by-allow.txt"
finished alpha "$A_PID"
[ "$(json_field "$(cat "$W/alpha.out")" permission_denials)" = "[]" ] || fail "denials: $(cat "$W/alpha.out")"
wait_for 10 "notification $N to be gone" in_dunst_history "$N" ||
  fail "notification $N is still there: $(dunstctl count) $(dunstctl history | tr -d '\n\t ' | head -c 600)"
grep -q "the person chose allow for a permission prompt of claude-code:" "$W/app3.log" || fail "the app did not answer: $(tail -n 5 "$W/app3.log")"
ok "dunst's context menu chose \"$(grep -F "[$N,allow]" "$W/context.log" | head -n 1)\": made-by-allow.txt exists, claude exited 0, notification $N is gone"

step "12. two sessions' prompts at once are listed in the tray menu; its Allow and Deny answer each"
claude_run beta "$HOME/work/beta" "touch made-from-the-menu.txt"
B_PID=$CLAUDE_PID
claude_run gamma "$HOME/work/gamma" "touch never-made.txt"
G_PID=$CLAUDE_PID
both_listed() {
  local m
  m=$(menu)
  [[ "$m" == *"Approvals (2)"* && "$m" == *"Bash touch made-from-the-menu.txt"* && "$m" == *"~/work/beta"* &&
    "$m" == *"Bash touch never-made.txt"* && "$m" == *"~/work/gamma"* ]]
}
wait_for 60 "both prompts in the menu" both_listed
echo "the menu's approvals:"
menu | cut -f3 | sed -n '/^Approvals (/,/^Pause notifications/p' | sed 's/^/  /'
# The menu drawn as a panel draws it, for the README and the book.
/usr/bin/python3 "$DESKTOP_PY" menu-shot $ITEM "$A/tray-menu-approval.png" 2>>"$W/menu-shot.log" ||
  fail "the menu could not be drawn: $(cat "$W/menu-shot.log")"
ok "screenshot $A/tray-menu-approval.png"
click_after "Bash touch made-from-the-menu.txt" Allow
wait_for 30 "the tool allowed from the menu to run" test -e "$HOME/work/beta/made-from-the-menu.txt"
finished beta "$B_PID"
wait_for 15 "one approval left in the menu" menu_has "Approvals (1)"
kill -0 "$G_PID" || fail "the second prompt did not wait: $(cat "$W/gamma.out")"
click_after "Bash touch never-made.txt" Deny
finished gamma "$G_PID"
[ -e "$HOME/work/gamma/never-made.txt" ] && fail "the denied tool ran"
grep -q "tool_result: .*Denied at this machine (sessionpipe)" "$W/gamma-api.log" || fail "the model was not told: $(cat "$W/gamma-api.log")"
no_approvals() { ! menu_has "Approvals ("; }
wait_for 15 "the approvals to leave the menu" no_approvals
ok "both listed; Allow ran made-from-the-menu.txt, Deny refused never-made.txt (the model read \"Denied at this machine\"); the menu has no approvals left"

step "13. the window shows a waiting prompt's Allow and Deny; the page's Allow runs the tool"
playwright=$root/node_modules/playwright-core
[ -d "$playwright" ] || fail "missing playwright-core: npm ci (at the repo root)"
claude_run delta "$HOME/work/delta" "touch made-in-the-window.txt"
D_PID=$CLAUDE_PID
wait_for 60 "the prompt in the menu" menu_has "Bash touch made-in-the-window.txt"
who=$(menu | cut -f3 | grep -F -B 1 "Bash touch made-in-the-window.txt" | head -n 1)
click "$who"
wait_for 20 "the window on the session" window_open
grep -q "the window opens on claude-code:" "$W/app3.log" || fail "the menu's line did not open the window on the session"
shot window-approval.png
ui_url=$(json_field "$(cat "$STATE/ui.json")" url)
ui_token=$(json_field "$(cat "$STATE/ui.json")" token)
SP_UI_PAGE="$ui_url/#token=$ui_token" node "$here/approve-in-page.mjs" "$root/ui" \
  "touch made-in-the-window.txt" "$A/page-approval.png" || fail "the page did not answer"
wait_for 30 "the tool allowed in the window to run" test -e "$HOME/work/delta/made-in-the-window.txt"
finished delta "$D_PID"
ok "the menu's \"$who\" opened the window (screenshot $A/window-approval.png); the page's Allow ran made-in-the-window.txt"

step "14. a prompt answered in the terminal withdraws its notification and leaves the menu"
S5=5e0c1a52-5555-4c1e-9d7a-000000000005
# The hook waits on the daemon now (local approvals): in the background.
permission "$S5" "make in-the-terminal" &
pids+=("$!")
wait_for 30 "an answerable Notify" has_answerable_notice 'make in-the-terminal'
N5=$(json_field "$(answerable_notice 'make in-the-terminal')" notify)
wait_for 15 "the prompt in the menu" menu_has "Bash make in-the-terminal"
tool_done "$S5" "make in-the-terminal"
wait_for 20 "CloseNotification $N5" closed "$N5"
not_in_menu() { ! menu_has "Bash make in-the-terminal"; }
wait_for 15 "the prompt to leave the menu" not_in_menu
ok "Notify id $N5 (with Allow and Deny) withdrawn with CloseNotification($N5); the menu no longer lists it"
click "Quit"
wait_for 15 "the app to quit" bash -c "! kill -0 $APP 2>/dev/null"

step "15. the account pool: a session's account at 95 % of its five-hour window notifies, once"
# A fake sign-in in a config dir of its own (no settings.json: `pool on`
# points only ~/.claude at the pool), imported; an upstream on loopback (the
# scripted Messages API) whose answers carry the rate-limit headers of
# $W/limits.headers; the app started with the pool's upstream pointed at it
# (a test-only variable the embedded daemon reads at its start, here only:
# the earlier steps ran without it, and with no pool). The sign-in and the
# listener's token go to the state dir's secrets file: a keychain asked on
# this bus would be a gnome-keyring started with the real HOME.
export SESSIONPIPE_SECRETS=file
POOL_DIR=$HOME/.claude-pool
mkdir -p "$POOL_DIR"
printf '{"claudeAiOauth": {"accessToken": "sk-ant-oat01-trayTestFAKEaccess", "refreshToken": "rt-fake", "expiresAt": %s}}\n' \
  $(($(now_ms) + 86400000)) >"$POOL_DIR/.credentials.json"
printf '{"oauthAccount": {"accountUuid": "acct-tray", "emailAddress": "tray@example.com"}}\n' >"$POOL_DIR/.claude.json"
"$SP_BIN/sessionpipe" pool add --import --config-dir "$POOL_DIR" >"$W/pool.log" 2>&1 ||
  fail "sessionpipe pool add --import: $(cat "$W/pool.log")"
grep -q "added acct-tray (tray@example.com) from ~/.claude-pool" "$W/pool.log" || fail "pool add: $(cat "$W/pool.log")"
limits() { # UTILIZATION: what the upstream's next answers say of the five-hour window
  printf 'anthropic-ratelimit-unified-status: allowed_warning\nanthropic-ratelimit-unified-representative-claim: five_hour\nanthropic-ratelimit-unified-5h-utilization: %s\nanthropic-ratelimit-unified-5h-reset: 4102444800\nanthropic-ratelimit-unified-7d-utilization: 0.2\nanthropic-ratelimit-unified-7d-reset: 4103049600\n' \
    "$1" >"$W/limits.headers.tmp"
  mv "$W/limits.headers.tmp" "$W/limits.headers"
}
limits 0.95
MESSAGES_API_HEADERS=$W/limits.headers /usr/bin/python3 "$DESKTOP_PY" messages-api "$W/upstream.port" "" 2>"$W/upstream-api.log" &
pids+=("$!")
wait_for 10 "the loopback upstream" test -s "$W/upstream.port"
UPSTREAM=http://127.0.0.1:$(cat "$W/upstream.port")
SESSIONPIPE_ANTHROPIC_API=$UPSTREAM start_app app4.log --hidden
find_item
wait_for 15 "the embedded daemon to hold the lock" lock_held_by "$APP"
grep -q "SESSIONPIPE_ANTHROPIC_API is set: .* talks to $UPSTREAM" "$W/app4.log" ||
  fail "the embedded daemon did not take the upstream: $(cat "$W/app4.log")"
cp "$HOME/.claude/settings.json" "$W/settings-before-pool.json"
"$SP_BIN/sessionpipe" pool on >>"$W/pool.log" 2>&1 || fail "sessionpipe pool on: $(cat "$W/pool.log")"
grep -q "~/.claude/settings.json: on" "$W/pool.log" || fail "pool on: $(cat "$W/pool.log")"
settings_env() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("env", {}).get(sys.argv[2], ""))' "$HOME/.claude/settings.json" "$1"; }
POOL_URL=$(settings_env ANTHROPIC_BASE_URL)
POOL_TOKEN=$(settings_env ANTHROPIC_AUTH_TOKEN)
[[ "$POOL_URL" == http://127.0.0.1:* && -n "$POOL_TOKEN" ]] || fail "settings.json env: $(cat "$HOME/.claude/settings.json")"
listening() { (: <"/dev/tcp/127.0.0.1/${POOL_URL##*:}") 2>/dev/null; }
wait_for 15 "the pool's listener on $POOL_URL" listening
ok "acct-tray imported from ~/.claude-pool; pool on: ~/.claude/settings.json points at $POOL_URL; the daemon's upstream is $UPSTREAM"
# A session its hooks started, then its requests, as Claude Code sends them
# (metadata.user_id names the session), through the listener.
S6=5e0c1a52-6666-4c1e-9d7a-000000000006
hook SessionStart "$S6" '"source":"startup"'
events_of() { "$SP_BIN/sessionpipe" tail --no-follow --json --session "$1"; }
started() { [[ "$(events_of "$S6")" == *session.started* ]]; }
wait_for 20 "the session's start in the outbox" started
ask_pool() {
  local uid body
  uid="{\\\"device_id\\\":\\\"tray-test\\\",\\\"account_uuid\\\":\\\"\\\",\\\"session_id\\\":\\\"$S6\\\"}"
  body="{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"Say OK.\"}],\"metadata\":{\"user_id\":\"$uid\"}}"
  curl -sS --max-time 10 -o "$W/pool-answer.json" -w '%{http_code}' -H "Authorization: Bearer $POOL_TOKEN" \
    -H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' \
    --data "$body" "$POOL_URL/v1/messages"
}
code=$(ask_pool) || fail "the pool's listener did not answer"
[ "$code" = 200 ] || fail "the pool answered $code: $(cat "$W/pool-answer.json")"
limit_summary="Claude Code is near a usage limit"
wait_for 20 "a Notify for the limit" has_notice "\"summary\": \"$limit_summary\""
line=$(notice_with "\"summary\": \"$limit_summary\"")
echo "Notify: $line"
[ "$(json_field "$line" app)" = sessionpipe ] || fail "app name: $line"
body=$(json_field "$line" body)
want="the five hour limit of account acct-tray is 95% used; it resets at 2100-01-01T00:00:00.000Z"$'\n'"~/work/project"
[ "$body" = "$want" ] || fail "unexpected body: ${body//$'\n'/\\n} (wanted ${want//$'\n'/\\n})"
ok "Notify id $(json_field "$line" notify): summary \"$limit_summary\", body \"${body//$'\n'/\\n}\""
# The same window and reset, fuller: a new limits.observed, no new attention.
limit_notices() { notices | grep -F '"notify"' | grep -c -F "\"summary\": \"$limit_summary\"" || true; }
observed() { [ "$(events_of "$S6" | grep -c '"limits.observed"' || true)" -ge "$1" ]; }
wait_for 10 "the first limits.observed" observed 1
limits 0.97
code=$(ask_pool) || fail "the pool's listener did not answer"
[ "$code" = 200 ] || fail "the pool answered $code: $(cat "$W/pool-answer.json")"
wait_for 20 "the second answer's limits.observed" observed 2
sleep 1.5 # the app's notices look every 0.3 s
[ "$(limit_notices)" = 1 ] || fail "the second answer notified again: $(notices | grep -F "$limit_summary")"
asked=$(events_of "$S6" | grep -c '"attention.needed"' || true)
[ "$asked" = 1 ] || fail "$asked attentions for the session: $(events_of "$S6")"
ok "a second answer at 97 % of the same window (same reset) made a second limits.observed and no second attention or Notify"
# The tray's usage line: today's tokens (the real Claude Code turns of the
# steps above, read from their transcripts) as `sessionpipe usage` counts
# them since this machine's midnight, and the fullest window, 97 %.
usage_line() { menu | cut -f3 | grep -F "Today: " | head -n 1 || true; }
has_window() { [[ "$(usage_line)" == *"5-hour window 97%"* ]]; }
wait_for 15 "the tray's usage line with the five-hour window" has_window || fail "no usage line: $(menu | cut -f3)"
line=$(usage_line)
midnight=$(date +%Y-%m-%dT00:00:00%:z)
want=$("$SP_BIN/sessionpipe" usage --since "$midnight" --by harness --json | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]["tokens"]
n = t["input"] + t["output"] + t["cache_read"] + t["cache_write"]
print(str(n) if n < 1000 else f"{n / 1e3:.1f} k" if n < 1e6 else f"{n / 1e6:.1f} M")')
[[ "$line" == "Today: $want tokens"* ]] || fail "the usage line says \"$line\", sessionpipe usage counts $want tokens today"
[[ "$line" == *" · 5-hour window 97%"* ]] || fail "the usage line: $line"
ok "the tray says \"$line\" (sessionpipe usage: $want tokens since $midnight)"
"$SP_BIN/sessionpipe" pool off >>"$W/pool.log" 2>&1 || fail "sessionpipe pool off: $(cat "$W/pool.log")"
grep -q "~/.claude/settings.json: off" "$W/pool.log" || fail "pool off: $(cat "$W/pool.log")"
cmp -s "$W/settings-before-pool.json" "$HOME/.claude/settings.json" ||
  fail "pool off did not give ~/.claude/settings.json back: $(diff "$W/settings-before-pool.json" "$HOME/.claude/settings.json")"
not_listening() { ! listening; }
wait_for 15 "the pool's listener to close" not_listening
ok "pool off: ~/.claude/settings.json is as it was before pool on, byte for byte; the listener closed"

step "16. a backfill running shows in the menu, and its line goes when it ends"
# Enough past sessions that the real backfill runs for seconds: the tray looks
# every 3 s, every second while a long work runs.
/usr/bin/python3 - "$HOME/.claude/projects/-work-backfill" 8000 <<'PY'
import json, os, sys
folder, n = sys.argv[1], int(sys.argv[2])
os.makedirs(folder, exist_ok=True)
for i in range(n):
    lines = [
        {"type": "user", "promptId": "p1", "timestamp": "2026-11-20T09:00:00.000Z",
         "cwd": "/work/backfill", "message": {"content": f"ask {i}"}},
        {"type": "assistant", "timestamp": "2026-11-20T09:00:09.000Z",
         "message": {"model": "claude-opus-5-5", "content": [{"type": "text", "text": "ok"}]}},
    ]
    with open(os.path.join(folder, f"{i:08x}-2222-4333-8444-555555555555.jsonl"), "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines))
PY
"$SP_BIN/sessionpipe" backfill >"$W/backfill.out" 2>"$W/backfill.err" &
BACKFILL=$!
pids+=("$BACKFILL")
seen_or_ended() { menu_has "Backfilling" || ! kill -0 "$BACKFILL" 2>/dev/null; }
wait_for 60 "the backfill's line in the menu" seen_or_ended
line=$(menu | cut -f3 | grep -F "Backfilling" | head -n 1 || true)
[ -n "$line" ] || fail "the backfill ended before the menu showed it: $(tail -n 3 "$W/backfill.err")"
ok "while the backfill ran the menu said \"$line\""
wait "$BACKFILL" || fail "the backfill failed: $(tail -n 5 "$W/backfill.err")"
grep -q "claude-code: 80[0-9][0-9] sessions" "$W/backfill.out" || fail "backfill: $(cat "$W/backfill.out")"
no_backfill_line() { ! menu_has "Backfilling"; }
wait_for 10 "the backfill's line to go" no_backfill_line
ok "the line went when the backfill ended ($(head -n 1 "$W/backfill.out"))"

step "17. a harness found after setup is offered in the menu; Watch installs its hooks, Don't offer again declines"
# Droid and Kiro "installed" now: their config folders appear (the daemon
# finds a harness by its CLI on PATH or its folder). The tray asks every 30 s.
mkdir -p "$HOME/.factory" "$HOME/.kiro"
offered() { menu_has "Watch Droid (found on this machine)" && menu_has "Watch Kiro (found on this machine)"; }
wait_for 45 "the menu to offer Droid and Kiro" offered
ok "offered: $(menu | cut -f3 | grep -F -e "Watch " -e "Don't offer" | paste -sd ';' -)"
click "Watch Droid (found on this machine)"
droid_hooked() { grep -qs "sessionpipe-hook" "$HOME/.factory/hooks.json"; }
wait_for 15 "Droid's hooks in ~/.factory/hooks.json" droid_hooked
click "Don't offer Kiro again"
kiro_declined() { grep -qs '"kiro"' "$SESSIONPIPE_STATE_DIR/harness-declined.json"; }
wait_for 15 "Kiro declined in harness-declined.json" kiro_declined
[ ! -e "$HOME/.kiro/hooks/sessionpipe.json" ] || fail "declining Kiro wrote its hooks"
no_offers() { ! menu_has "Watch Droid" && ! menu_has "Kiro (found"; }
wait_for 15 "the offers' lines to go" no_offers
"$SP_BIN/sessionpipe" status >"$W/status-offers.txt" 2>&1 || true
grep -q "droid: current" "$W/status-offers.txt" || fail "status after Watch Droid: $(cat "$W/status-offers.txt")"
ok "Watch Droid installed its hooks (status: $(grep -F "droid:" "$W/status-offers.txt")); Kiro is declined and was not touched; the lines went"
click "Quit"
wait_for 15 "the app to quit" bash -c "! kill -0 $APP 2>/dev/null"

step "18. SIGTERM and SIGINT end the app as Quit does"
S7=5e0c1a52-7777-4c1e-9d7a-000000000007
JOBS=2000
# A backlog: hooks that found no daemon and could start no worker.
for n in $(seq "$JOBS"); do
  SESSIONPIPE_BIN=/nonexistent hook PostToolUse "$S7" \
    "\"tool_name\":\"Bash\",\"tool_use_id\":\"toolu_$n\",\"tool_input\":{\"command\":\"echo $n\"},\"tool_response\":{\"stdout\":\"$n\",\"stderr\":\"\",\"interrupted\":false}"
done
spooled() { find "$STATE/spool" -maxdepth 1 -name '*.job' ! -name '.*' | wc -l; }
[ "$(spooled)" = "$JOBS" ] || fail "$(spooled) jobs spooled, not $JOBS"
unregistered() { grep -q "^unregistered [0-9]* $1\$" "$W/watch.log"; }
# ended_as_quit SIGNAL LOG: the app ends within a second, exit 0, its daemon
# stopped (not killed, not started again), its tray item gone from the watcher.
ended_as_quit() {
  local signal=$1 log=$2 item=$ITEM t0 took code=0
  t0=$(now_ms)
  kill "-$signal" "$APP"
  wait_for 5 "the app to end after SIG$signal" gone "$APP" || fail "SIG$signal did not end the app: $(tail -n 5 "$W/$log")"
  took=$(($(now_ms) - t0))
  wait "$APP" || code=$?
  [ "$code" = 0 ] || fail "the app exited $code after SIG$signal: $(tail -n 5 "$W/$log")"
  # The app waits up to 2 s for its daemon: a release build's stops within
  # half a second; a batch under way stops at its next job, so a debug build
  # on a loaded machine does too (a whole batch of 1 024 once took over 2 s).
  ((took < 2500)) || fail "SIG$signal to exit took $took ms"
  grep -q "SIG$signal: the app ends as Quit does" "$W/$log" || fail "the app did not say why it ended: $(cat "$W/$log")"
  grep -q "stopping (asked by the program it runs in)" "$W/$log" || fail "the daemon did not stop: $(cat "$W/$log")"
  grep -q "the embedded daemon stopped" "$W/$log" || fail "the daemon's thread did not end: $(cat "$W/$log")"
  [ "$(grep -c "daemon running" "$W/$log")" = 1 ] || fail "the daemon started again: $(cat "$W/$log")"
  for f in ui.json wake.sock wake-stream.sock control.sock; do
    [ ! -e "$STATE/$f" ] || fail "$f is left after SIG$signal: the daemon did not stop as it should"
  done
  wait_for 5 "the tray item $item to leave the watcher" unregistered "$item"
  ok "SIG$signal: exit 0 in $took ms; the daemon said \"stopping\" and stopped, ui.json and the sockets gone; the tray item unregistered"
}
# The signal goes as soon as the tray is up and the daemon runs (its ingest
# starts then), so it comes into the backlog: the item is the one registered
# after the watcher's log had $seen lines (no other app runs now), without
# find_item's slower look on the bus.
seen=$(wc -l <"$W/watch.log")
registered_since() { tail -n +$((seen + 1)) "$W/watch.log" | grep -m 1 '^registered ' | cut -d' ' -f3-; }
start_app app5.log --hidden
wait_for 30 "the tray item" registered_since
ITEM=$(registered_since)
wait_for 15 "the embedded daemon to run" grep -q "daemon running" "$W/app5.log"
ended_as_quit TERM app5.log
left=$(spooled)
ok "$((JOBS - left)) of $JOBS jobs in the outbox when the app ended (a batch under way commits the jobs it has done), $left left in the spool for the next start"

start_app app6.log
find_item
wait_for 20 "the window" window_open
# Every job in the outbox once: the ones taken before the signal and the rest.
tools_ended() { "$SP_BIN/sessionpipe" tail --no-follow --json --session "$S7" | /usr/bin/python3 -c '
import json, sys
ids = [json.loads(l)["data"]["call_id"] for l in sys.stdin if l.strip() and json.loads(l)["type"] == "tool.ended"]
print(len(ids), len(set(ids)))'; }
all_in() { [ "$(tools_ended)" = "$JOBS $JOBS" ]; }
wait_for 60 "all $JOBS tool.ended in the outbox" all_in || fail "tool.ended (all, distinct): $(tools_ended)"
[ "$(spooled)" = 0 ] || fail "$(spooled) jobs still spooled"
ok "all $JOBS jobs are in the outbox once each; the spool is empty"
procs=$(window_pids | xargs)
[ -n "$procs" ] || fail "no window process under the app"
ended_as_quit INT app6.log
# shellcheck disable=SC2086
wait_for 10 "the window's processes ($procs) to end" gone $procs
window_closed || fail "the window is still on screen"
ok "SIGINT ended the open window too ($procs)"

printf '\nall app checks passed\n'
