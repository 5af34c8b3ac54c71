#!/usr/bin/env bash
# Installs the deb with dpkg -i (this machine is disposable; run as root) and
# proves, in temporary HOMEs and state dirs:
#   1. the package holds the binaries in /usr/bin (the tray, its window, the CLI
#      and the hook), the UI in
#      /usr/share/sessionpipe/ui, a desktop entry and icons; all three run
#      (`--version`/`--help`; the hook as a harness runs it, which spools the
#      payload and starts the installed drain worker, which stores the event);
#   2. `sessionpipe install` from the package writes hooks that run
#      /usr/bin/sessionpipe-hook (the stable path: no version, no temp dir), and
#      installing the same package again (an upgrade) leaves them current;
#   3. the installed `sessionpipe daemon` serves the installed UI;
#   4. the installed app passes src-tauri/tests/xvfb.sh (tray, notifications,
#      window) with nothing from the build tree but the test's own scripts;
# then removes the package (unless --keep).
# Usage: installers/test-deb.sh [--keep] [DEB]   (default: target/release/bundle/deb/*.deb)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep=false
deb=""
for arg in "$@"; do
  case "$arg" in
    --keep) keep=true ;;
    *) deb=$arg ;;
  esac
done
if [ -z "$deb" ]; then
  deb=$(ls "${CARGO_TARGET_DIR:-$root/target}"/release/bundle/deb/*.deb 2>/dev/null | head -n 1 || true)
fi
[ -f "$deb" ] || { echo "test-deb.sh: no deb (run installers/build-deb.sh first)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "test-deb.sh: run as root (it installs the package)" >&2; exit 1; }
for tool in dpkg curl; do
  command -v "$tool" >/dev/null || { echo "test-deb.sh: $tool is missing" >&2; exit 1; }
done

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
work=$(mktemp -d /tmp/sp-deb-test.XXXXXX)
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
  rm -rf "$work"
  if ! $keep && dpkg-query -W -f='${Status}' sessionpipe 2>/dev/null | grep -q "install ok installed"; then
    dpkg -r sessionpipe >/dev/null && echo "(removed the package; --keep keeps it)"
  fi
}
trap cleanup EXIT

step "dpkg -i $(basename "$deb") ($(du -h "$deb" | cut -f1))"
if ! dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
  echo "dpkg -i left dependencies to install; apt-get -f install" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq >>"$work/dpkg.log" 2>&1 ||
    { cat "$work/dpkg.log" >&2; fail "the package did not install"; }
fi
dpkg-query -W -f='${Package} ${Version} ${Status}\n' sessionpipe

step "1. what the package holds, and the binaries run"
for f in /usr/bin/sessionpipe-app /usr/bin/sessionpipe-window /usr/bin/sessionpipe /usr/bin/sessionpipe-hook; do
  [ -x "$f" ] && [ ! -L "$f" ] || fail "$f is not an executable file"
done
[ -f /usr/share/sessionpipe/ui/index.html ] || fail "no /usr/share/sessionpipe/ui/index.html"
desktop=$(dpkg -L sessionpipe | grep '^/usr/share/applications/.*\.desktop$' | head -n 1)
[ -n "$desktop" ] || fail "no desktop entry"
grep -q '^Exec=sessionpipe-app' "$desktop" || fail "desktop entry Exec: $(grep ^Exec "$desktop")"
icons=$(dpkg -L sessionpipe | grep -c '^/usr/share/icons/.*\.png$' || true)
((icons > 0)) || fail "no icons"
ok "binaries in /usr/bin, UI in /usr/share/sessionpipe/ui, $desktop, $icons icons"
# The man pages and completions the CLI generated from its own definition.
zcat /usr/share/man/man1/sessionpipe.1.gz | grep -q '^\.TH sessionpipe 1' || fail "no sessionpipe(1)"
pages=$(dpkg -L sessionpipe | grep -c '^/usr/share/man/man1/sessionpipe-.*\.1\.gz$' || true)
((pages > 20)) || fail "only $pages command man pages"
zcat /usr/share/man/man1/sessionpipe-pool-on.1.gz | grep -q 'Point every Claude Code config dir at the pool' ||
  fail "sessionpipe-pool-on(1) does not say what the command does"
bash -c 'source /usr/share/bash-completion/completions/sessionpipe && complete -p sessionpipe' >/dev/null ||
  fail "the bash completion does not register"
for f in /usr/share/zsh/vendor-completions/_sessionpipe /usr/share/fish/vendor_completions.d/sessionpipe.fish; do
  [ -s "$f" ] || fail "no $f"
done
ok "sessionpipe(1) and $pages command pages; bash, zsh and fish completions"
/usr/bin/sessionpipe-app --version
/usr/bin/sessionpipe-app --help | head -n 1
/usr/bin/sessionpipe --version
/usr/bin/sessionpipe --help | head -n 1
export HOME=$work/home SESSIONPIPE_STATE_DIR=$work/state
unset SESSIONPIPE_HOOK_BIN SESSIONPIPE_UI_DIR XDG_STATE_HOME CLAUDE_CONFIG_DIR
mkdir -p "$HOME/.claude" "$HOME/work/project"
session=0d3b7f10-aaaa-4bbb-8ccc-000000000001
printf '{"session_id":"%s","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}\n' \
  "$session" "$HOME/work/project" | /usr/bin/sessionpipe-hook claude-code SessionStart
ok "sessionpipe-hook claude-code SessionStart exited $?"
for _ in $(seq 100); do
  out=$(/usr/bin/sessionpipe tail --no-follow --session "$session" 2>/dev/null || true)
  [[ "$out" == *session.started* ]] && break
  sleep 0.1
done
[[ "$out" == *session.started* ]] || fail "the installed drain worker stored nothing: $(ls -R "$SESSIONPIPE_STATE_DIR")"
ok "the installed drain worker stored it: $out"

step "2. sessionpipe install writes hooks that run /usr/bin/sessionpipe-hook"
/usr/bin/sessionpipe install --harness claude-code
settings=$HOME/.claude/settings.json
commands=$(/usr/bin/python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for groups in doc.get("hooks", {}).values():
    for g in groups:
        for h in g.get("hooks", []):
            print(h.get("command", ""))
' "$settings")
[ -n "$commands" ] || fail "no hook commands in $settings"
n=$(printf '%s\n' "$commands" | wc -l)
# The path is written quoted (it may hold spaces elsewhere).
others=$(printf '%s\n' "$commands" | grep -Ev '^"?/usr/bin/sessionpipe-hook"? claude-code [A-Za-z]+$' || true)
[ -z "$others" ] || fail "hooks not running /usr/bin/sessionpipe-hook: $others"
ok "$n hook entries, all: $(printf '%s\n' "$commands" | head -n 1 | cut -d' ' -f1-2) <Event>"
grep -q "/tmp\|/target/\|0\.1\.0" <<<"$commands" && fail "a versioned or temporary path: $commands"
dpkg -i "$deb" >/dev/null 2>&1 || fail "installing the package again (an upgrade) failed"
status=$(/usr/bin/sessionpipe status 2>&1 || true)
[[ "$(printf '%s\n' "$status" | grep -i 'claude-code')" == *current* ]] || fail "after reinstalling: $status"
ok "after installing the package again: $(printf '%s\n' "$status" | grep -i 'claude-code' | head -n 1 | xargs)"

step "3. the installed daemon serves the installed UI"
/usr/bin/sessionpipe daemon >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do
  url=$(/usr/bin/sessionpipe ui 2>/dev/null || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || fail "sessionpipe ui gave no address: $(cat "$work/daemon.log")"
page=$(curl -fsS "${url%%#*}")
[ "$page" = "$(cat /usr/share/sessionpipe/ui/index.html)" ] || fail "the daemon's page is not /usr/share/sessionpipe/ui/index.html"
ok "${url%%#*} serves /usr/share/sessionpipe/ui"
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=""

step "4. the installed app on a headless desktop"
SESSIONPIPE_BIN_DIR=/usr/bin SESSIONPIPE_APP_ARTIFACTS=$root/test-artifacts/app-deb \
  "$root/src-tauri/tests/xvfb.sh"

printf '\nall deb checks passed\n'
