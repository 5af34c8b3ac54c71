#!/usr/bin/env bash
# Installs the sessionpipe-receiver deb with dpkg -i (this machine is
# disposable; run as root) and proves:
#   1. the package holds the binary, the unit and the env example; postinst
#      made the system user, /var/lib/sessionpipe-receiver (0700, the user's)
#      and /etc/sessionpipe-receiver.env (0600, a new token);
#   2. it runs under the unit's settings: with systemd (PID 1 here) by
#      `systemctl start`; without (a container) the unit's ExecStart, its
#      ${...} filled from the env file and StateDirectory, as the unit's
#      user with its umask and file limit (which of the two happened is
#      said); discovery answers on 127.0.0.1:8470, every test door is 404
#      (the binary as it ships), the process is the user's and its database
#      is private in the data folder;
#   3. `dpkg -r` removes the binary and the unit and keeps the data and the
#      settings; `dpkg --purge` deletes them (the user stays).
# The package is purged at the end, also when a step fails.
# Usage: installers/test-receiver-deb.sh DEB
set -euo pipefail
deb=${1:-}
[ -f "$deb" ] || { echo "usage: installers/test-receiver-deb.sh DEB" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test-receiver-deb.sh: run as root (it installs the package)" >&2; exit 1; }
for tool in dpkg curl setpriv getent stat; do
  command -v "$tool" >/dev/null || { echo "test-receiver-deb.sh: $tool is missing" >&2; exit 1; }
done

pkg=sessionpipe-receiver
user=sessionpipe-receiver
data=/var/lib/sessionpipe-receiver
env_file=/etc/sessionpipe-receiver.env
unit=/lib/systemd/system/sessionpipe-receiver.service
url=http://127.0.0.1:8470

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
installed() { [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" = "install ok installed" ]; }
mode() { stat -c '%a %U' "$1"; }
answers() { curl -fsS --max-time 2 "$url/.well-known/sessionpipe" 2>/dev/null; }
installed && fail "$pkg is installed already (dpkg --purge $pkg first)"
answers >/dev/null && fail "something answers on $url already: the unit listens there"

systemd=false
[ -d /run/systemd/system ] && systemd=true
work=$(mktemp -d /tmp/sp-receiver-deb-test.XXXXXX)
pid=""
cleanup() {
  set +e
  if $systemd; then
    systemctl stop "$pkg" >/dev/null 2>&1
  elif [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  if dpkg-query -W "$pkg" >/dev/null 2>&1; then
    dpkg --purge "$pkg" >/dev/null 2>&1 && echo "(purged the package)"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step "dpkg -i $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg -i "$deb" 2>&1 | tee "$work/dpkg.log"
installed || fail "not installed: $(cat "$work/dpkg.log")"
dpkg-query -W -f='${Package} ${Version} ${Status}\n' "$pkg"

step "1. what the package holds, and what postinst made"
[ -x /usr/bin/sessionpipe-receiver ] || fail "no /usr/bin/sessionpipe-receiver"
[ -f "$unit" ] || fail "no $unit"
[ -f /usr/share/doc/$pkg/receiver.env.example ] || fail "no env example"
/usr/bin/sessionpipe-receiver --version
getent passwd "$user" >/dev/null || fail "no user $user"
[ "$(mode "$data")" = "700 $user" ] || fail "$data is $(mode "$data"), not 700 $user"
[ "$(mode "$env_file")" = "600 root" ] || fail "$env_file is $(mode "$env_file"), not 600 root"
token=$(sed -n 's/^SESSIONPIPE_RECEIVER_TOKEN=//p' "$env_file")
{ [ "${#token}" -eq 64 ] && [ "$token" != change-me ]; } || fail "$env_file has no new token"
grep -q 'you set ORIGIN\|set ORIGIN' "$work/dpkg.log" || fail "postinst did not say what to set"
ok "binary, unit, example; user $user; $data 700; $env_file 600 with a new token"

step "2. started under the unit's settings"
# The page on localhost, as a test on this machine can open it.
sed -i -e 's#^ORIGIN=.*#ORIGIN=http://localhost:8470#' -e 's#^RP_ID=.*#RP_ID=localhost#' "$env_file"
if $systemd; then
  echo "systemd runs here: systemctl start $pkg"
  systemctl daemon-reload
  systemctl start "$pkg"
  pid=$(systemctl show -p MainPID --value "$pkg")
else
  echo "systemd does not run here (a container): the unit's ExecStart, as $user, with $env_file"
  # The unit's settings a process gets without systemd: its user, UMask,
  # LimitNOFILE, EnvironmentFile, and StateDirectory's ${STATE_DIRECTORY}.
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
  umask_value=$(sed -n 's/^UMask=//p' "$unit")
  nofile=$(sed -n 's/^LimitNOFILE=//p' "$unit")
  line=$(
    set -a
    # shellcheck disable=SC1090
    . "$env_file"
    export STATE_DIRECTORY=$data
    # ${NAME} as systemd fills it, from the file (and STATE_DIRECTORY).
    out=$exec_start
    while [[ "$out" =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
      name=${BASH_REMATCH[1]}
      out=${out//\$\{$name\}/${!name-}}
    done
    printf '%s' "$out"
  )
  read -ra argv <<<"$line"
  echo "  ${argv[*]}"
  (
    umask "$umask_value"
    ulimit -n "$nofile"
    set -a
    # shellcheck disable=SC1090
    . "$env_file"
    exec setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs -- "${argv[@]}"
  ) >"$work/receiver.out" 2>"$work/receiver.err" &
  pid=$!
fi
for _ in $(seq 100); do
  answers >"$work/discovery.json" && break
  sleep 0.1
done
[ -s "$work/discovery.json" ] || {
  if $systemd; then journalctl -u "$pkg" --no-pager | tail -n 20 >&2; else cat "$work/receiver.err" >&2; fi
  fail "no discovery on $url"
}
grep -q '"protocol"' "$work/discovery.json" || fail "discovery: $(cat "$work/discovery.json")"
grep -q '"control"' "$work/discovery.json" || fail "no control side: $(cat "$work/discovery.json")"
ok "discovery on $url: $(head -c 120 "$work/discovery.json")..."
[ "$(ps -o user= -p "$pid" | xargs)" = "$user" ] || fail "the receiver runs as $(ps -o user= -p "$pid")"
ok "pid $pid runs as $user"
for door in /test/faults /test/pair/approve /test/control/enqueue; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "authorization: Bearer $token" \
    -H 'content-type: application/json' -d '{}' "$url$door")
  [ "$code" = 404 ] || fail "$door answered $code: a test door in the package"
done
ok "the test doors answer 404"
db=$data/receiver.db
[ -f "$db" ] || fail "no $db"
[ "$(mode "$db")" = "600 $user" ] || fail "$db is $(mode "$db")"
ok "$db: 600 $user"
if $systemd; then
  systemctl stop "$pkg"
else
  kill "$pid"
  wait "$pid" 2>/dev/null || true
fi
pid=""

step "3. dpkg -r keeps the data and the settings; dpkg --purge deletes them"
dpkg -r "$pkg" >/dev/null
{ [ ! -e /usr/bin/sessionpipe-receiver ] && [ ! -e "$unit" ]; } || fail "dpkg -r left the binary or the unit"
{ [ -f "$db" ] && [ -f "$env_file" ]; } || fail "dpkg -r deleted the data or the settings"
ok "removed: the data and $env_file are kept"
dpkg --purge "$pkg" >/dev/null
{ [ ! -e "$data" ] && [ ! -e "$env_file" ]; } || fail "dpkg --purge left $data or $env_file"
getent passwd "$user" >/dev/null || fail "the user went with the purge"
ok "purged: $data and $env_file are gone; the user $user stays"

printf '\nall receiver deb checks passed (%s)\n' "$($systemd && echo "under systemd" || echo "ExecStart as $user, no systemd here")"
