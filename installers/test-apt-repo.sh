#!/usr/bin/env bash
# The deb as a user gets it through apt: a repository built by
# installers/apt-repo.sh and signed with a throwaway key (made here, in a
# temporary GnuPG home), served over HTTP on 127.0.0.1, its keyring fetched
# into /etc/apt/keyrings/ and a sources.list.d entry with signed-by= it; then
#   1. apt-get update (that source only) takes it without a warning, and
#      apt-cache policy gives the package from it (and each MORE deb's, the
#      receiver's: one repository holds them all);
#   2. apt-get install sessionpipe installs it from there;
#   3. a newer version published and signed (the same package, its version
#      raised) is taken by apt-get update and apt-get install --only-upgrade;
#      apt-get remove removes it;
#   4. apt refuses the repository, each time in a fresh lists directory, when
#      an index and the Release's hashes of it are changed after signing, when
#      it is signed by another key, and when it is not signed (while the same
#      check passes for the real one).
# What the package holds and that the app works are installers/test-deb.sh's
# checks, not repeated here. The package, the source entry, the keyring, apt's
# lists of that source, the server and the keys are removed at the end, also
# when a step fails.
# Usage: installers/test-apt-repo.sh DEB [MORE...]   (as root; this machine is disposable)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: installers/test-apt-repo.sh DEB [MORE...]" >&2; exit 2; }
deb=${1:-}
[ -f "$deb" ] || usage
shift
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
more=()
for d in "$@"; do
  [ -f "$d" ] || usage
  more+=("$(cd "$(dirname "$d")" && pwd)/$(basename "$d")")
done
[ "$(id -u)" -eq 0 ] || { echo "test-apt-repo.sh: run as root (it installs the package)" >&2; exit 1; }
for tool in apt-get apt-cache apt-ftparchive gpg gpgv gpgconf python3 curl dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "test-apt-repo.sh: $tool is missing (apt: apt-utils gnupg python3 curl)" >&2; exit 1; }
done

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}
installed() { [ "$(dpkg-query -W -f='${Status}' sessionpipe 2>/dev/null || true)" = "install ok installed" ]; }
installed && fail "sessionpipe is installed already (dpkg -r sessionpipe first)"

pkg=$(dpkg-deb -f "$deb" Package)
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
name=sessionpipe-apt-test
list=/etc/apt/sources.list.d/$name.list
keyring=/etc/apt/keyrings/$name.gpg
work=$(mktemp -d /tmp/sp-apt-test.XXXXXX)
# apt fetches as its _apt user, into lists directories made in here.
chmod 755 "$work"
server=""
port=""
cleanup() {
  set +e
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
  fi
  if installed; then
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "$pkg" >/dev/null 2>&1 && echo "(removed the package)"
  fi
  rm -f "$list" "$keyring"
  [ -n "$port" ] && rm -f /var/lib/apt/lists/127.0.0.1:"$port"_* /var/lib/apt/lists/partial/127.0.0.1:"$port"_*
  for home in "$work/gnupg" "$work/other-gnupg"; do
    [ -d "$home" ] && GNUPGHOME=$home gpgconf --kill all
  done
  rm -rf "$work"
}
trap cleanup EXIT

step "a throwaway signing key, and the repository of $(basename "$deb")"
newkey() { # GNUPGHOME: a new passphrase-less signing key there; prints its fingerprint
  mkdir -m 700 "$1"
  GNUPGHOME=$1 gpg --batch --quiet --passphrase '' \
    --quick-gen-key "sessionpipe apt test <apt-test@sessionpipe.invalid>" ed25519 sign 1d 2>"$1.log" ||
    { cat "$1.log" >&2; fail "gpg --quick-gen-key"; }
  GNUPGHOME=$1 gpg --batch --with-colons --list-secret-keys 2>>"$1.log" | awk -F: '$1 == "fpr" { print $10; exit }'
}
export GNUPGHOME=$work/gnupg
fpr=$(newkey "$GNUPGHOME")
[ -n "$fpr" ] || fail "no key made: $(cat "$GNUPGHOME.log")"
www=$work/www
mkdir -p "$www"
"$root/installers/apt-repo.sh" --key "$fpr" --out "$www/good" "$deb" "${more[@]}"

python3 -u -m http.server --bind 127.0.0.1 --directory "$www" 0 >"$work/http.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  port=$(sed -n 's/^Serving HTTP on 127\.0\.0\.1 port \([0-9]*\).*/\1/p' "$work/http.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "the HTTP server did not start: $(cat "$work/http.log")"
url=http://127.0.0.1:$port/good
ok "served on $url, signed by $fpr"

step "1. the source added as a user adds it; apt-get update of it"
# As the book says (docs/src/install.md): the keyring from the repository, then the entry.
mkdir -p /etc/apt/keyrings
curl -fsS "$url/sessionpipe-archive-keyring.gpg" -o "$keyring"
chmod 0644 "$keyring"
echo "deb [signed-by=$keyring] $url stable main" >"$list"
cat "$list"
# Only this source is fetched, and the other sources' lists are left as they are.
only=(-o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0)
apt-get update "${only[@]}" >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; fail "apt-get update"; }
! grep -E '^(W|E|Err):' "$work/update.log" || fail "apt-get update warned (above)"
grep -E '^(Get|Hit):' "$work/update.log"
# from_repo VERSION: apt-cache policy lists VERSION with this repository as a source.
from_repo() {
  apt-cache policy "$pkg" | awk -v v="$1" -v u="$url stable/main" '
    $1 == v || ($1 == "***" && $2 == v) { in_v = 1; next }
    in_v && /^ +[0-9]+ / { if (index($0, u)) found = 1; next }
    { in_v = 0 }
    END { exit !found }'
}
apt-cache policy "$pkg"
candidate=$(apt-cache policy "$pkg" | awk '$1 == "Candidate:" { print $2 }')
[ "$candidate" = "$version" ] || fail "the candidate is '$candidate', not $version"
from_repo "$version" || fail "apt-cache policy does not give $version from $url"
ok "the candidate is $version, from $url"
for d in "${more[@]}"; do
  p=$(dpkg-deb -f "$d" Package)
  v=$(dpkg-deb -f "$d" Version)
  c=$(apt-cache policy "$p" | awk '$1 == "Candidate:" { print $2 }')
  [ "$c" = "$v" ] || fail "$p: the candidate is '$c', not $v"
  apt-cache policy "$p" | grep -qF "$url stable/main" || fail "$p is not offered by $url"
  ok "the same repository offers $p $v"
done

step "2. apt-get install $pkg"
mkdir -p "$work/archives/partial"
apt_install() { # ARGS...: apt-get install, downloading into the work dir (not apt's cache)
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -o Dir::Cache::archives="$work/archives" "$@" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "apt-get install $*"; }
}
apt_install "$pkg"
grep -F "$url stable/main $arch $pkg $arch $version" "$work/install.log" ||
  fail "apt-get install did not fetch $pkg $version from $url: $(cat "$work/install.log")"
installed || fail "not installed"
[ "$(dpkg-query -W -f='${Version}' "$pkg")" = "$version" ] || fail "installed: $(dpkg-query -W -f='${Version}' "$pkg")"
policy=$(apt-cache policy "$pkg")
[[ "$policy" == *"Installed: $version"* ]] || fail "apt-cache policy: $policy"
/usr/bin/sessionpipe --version
ok "$pkg $version installed from $url"

step "3. a newer version published: apt-get update, install --only-upgrade; then apt-get remove"
v2=$version+apttest1
deb2=$work/${pkg}_${v2}_$arch.deb
dpkg-deb -R "$deb" "$work/v2"
sed -i "s/^Version: .*/Version: $v2/" "$work/v2/DEBIAN/control"
dpkg-deb -Zgzip -z1 --root-owner-group -b "$work/v2" "$deb2" >/dev/null
rm -rf "$work/v2"
"$root/installers/apt-repo.sh" --key "$fpr" --out "$www/good" "$deb" "$deb2" "${more[@]}"
apt-get update "${only[@]}" >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; fail "apt-get update"; }
! grep -E '^(W|E|Err):' "$work/update.log" || fail "apt-get update warned (above)"
from_repo "$v2" || fail "apt-cache policy does not give $v2 from $url: $(apt-cache policy "$pkg")"
apt_install --only-upgrade "$pkg"
grep -F "$url stable/main $arch $pkg $arch $v2" "$work/install.log" ||
  fail "the upgrade did not fetch $v2 from $url: $(cat "$work/install.log")"
[ "$(dpkg-query -W -f='${Version}' "$pkg")" = "$v2" ] || fail "after the upgrade: $(dpkg-query -W -f='${Version}' "$pkg")"
/usr/bin/sessionpipe --version
ok "upgraded from $version to $v2 by apt"
DEBIAN_FRONTEND=noninteractive apt-get remove -y "$pkg" >"$work/remove.log" 2>&1 ||
  { cat "$work/remove.log" >&2; fail "apt-get remove"; }
! installed || fail "still installed after apt-get remove"
for f in /usr/bin/sessionpipe /usr/bin/sessionpipe-app; do
  [ ! -e "$f" ] || fail "apt-get remove left $f"
done
ok "apt-get remove $pkg removed it"

step "4. apt refuses a repository whose signature does not hold"
# update_fresh NAME: apt-get update of $www/NAME alone, with lists and caches
# of its own (nothing of apt's own state is used or changed); its log in $work.
update_fresh() {
  local state=$work/state-$1
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  echo "deb [signed-by=$keyring] http://127.0.0.1:$port/$1 stable main" >"$state/sources.list"
  apt-get update -o Dir::Etc::sourcelist="$state/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache" >"$work/$1.log" 2>&1
}
has_index() { compgen -G "$work/state-$1/lists/*_Packages*" >/dev/null; }
# refuses NAME WHAT REASON: apt-get update of $www/NAME fails, for REASON, and keeps no index.
refuses() {
  if update_fresh "$1"; then
    cat "$work/$1.log" >&2
    fail "apt-get update took $2"
  fi
  grep -q -- "$3" "$work/$1.log" || { cat "$work/$1.log" >&2; fail "$2: refused, but not for $3"; }
  ! has_index "$1" || fail "$2: apt kept its index"
  ok "$2: refused: $(grep -m 1 -o -- "$3.*" "$work/$1.log" | cut -c1-90)"
  grep -m 1 '^E:' "$work/$1.log" | sed 's/^/    /'
}
# variant NAME: a copy of the real repository's dists/ (its pool shared) to change.
variant() {
  mkdir -p "$www/$1"
  cp -r "$www/good/dists" "$www/$1/"
  ln -s ../good/pool "$www/$1/pool"
}
update_fresh good || { cat "$work/good.log" >&2; fail "the real repository, in a fresh lists directory"; }
has_index good || fail "the real repository, in a fresh lists directory: no index"
ok "the real repository, checked the same way: taken"

variant tampered
# What an attacker who can change the files but has not the key does: a
# Packages index offering another version, and the Release's (and the
# InRelease's) hashes made to match it; their signatures as they were.
index=$www/tampered/dists/stable/main/binary-$arch
sed -i "s/^Version: $v2\$/Version: 99.0.0/" "$index/Packages"
rm "$index/Packages.gz" && gzip -9nk "$index/Packages"
python3 - "$www/tampered/dists/stable" <<'EOF'
import hashlib, os, re, sys
d = sys.argv[1]
algos = {"MD5Sum": "md5", "SHA1": "sha1", "SHA256": "sha256", "SHA512": "sha512"}
for name in ("Release", "InRelease"):
    path = os.path.join(d, name)
    out, algo = [], None
    for line in open(path).read().split("\n"):
        m = re.match(r"^(\w+):$", line)
        if m:
            algo = algos.get(m.group(1))
        elif algo and line.startswith(" "):
            _, _, f = line.split()
            data = open(os.path.join(d, f), "rb").read()
            line = " %s %16d %s" % (hashlib.new(algo, data).hexdigest(), len(data), f)
        else:
            algo = None
        out.append(line)
    open(path, "w").write("\n".join(out))
EOF
grep -q '^Version: 99.0.0$' "$index/Packages" || fail "the tampered index is not changed"
! cmp -s "$www/good/dists/stable/InRelease" "$www/tampered/dists/stable/InRelease" || fail "the tampered InRelease is not changed"
refuses tampered "an index and the Release's hashes changed after signing" BADSIG

variant other-key
otherfpr=$(newkey "$work/other-gnupg")
[ -n "$otherfpr" ] || fail "no other key made: $(cat "$work/other-gnupg.log")"
for mode in --clearsign:InRelease --detach-sign:Release.gpg; do
  GNUPGHOME=$work/other-gnupg gpg --batch --yes --quiet --local-user "$otherfpr" --armor "${mode%%:*}" \
    -o "$www/other-key/dists/stable/${mode#*:}" "$www/other-key/dists/stable/Release"
done
refuses other-key "signed by another key ($otherfpr)" NO_PUBKEY

variant unsigned
rm "$www/unsigned/dists/stable/InRelease" "$www/unsigned/dists/stable/Release.gpg"
refuses unsigned "not signed" "is not signed"

printf '\nall apt repository checks passed\n'
