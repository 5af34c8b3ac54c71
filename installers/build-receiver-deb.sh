#!/usr/bin/env bash
# Builds the sessionpipe-receiver deb, for the same signed apt repository as
# the app's (installers/apt-repo.sh takes both):
#   /usr/bin/sessionpipe-receiver        the binary as it ships (installers/build-receiver.sh:
#                                        the package alone, no test doors)
#   /lib/systemd/system/sessionpipe-receiver.service   the hardened unit (installers/receiver/)
#   /usr/share/doc/sessionpipe-receiver/receiver.env.example, copyright
# and its maintainer scripts (installers/receiver/deb/): postinst makes the
# system user sessionpipe-receiver, its data folder /var/lib/sessionpipe-receiver
# (0700) and, when there is none, /etc/sessionpipe-receiver.env (0600, a new
# random token) from the example; it starts nothing (the origin is the
# operator's to set first). `dpkg -r` keeps the data folder and the
# settings, `dpkg --purge` deletes both (the user stays, as Debian's users
# do). Depends: what dpkg-shlibdeps reads off the binary.
#
# Needs the receiver's page built first (npm ci && npm run build at the repo
# root): the binary carries it. Needs dpkg-deb and dpkg-shlibdeps (dpkg-dev).
#
# Usage: installers/build-receiver-deb.sh [--debug]   → prints the .deb's path last
#   --debug  package the dev profile's binary, built without test doors in
#            target/debug/shipped (where receiver/tests/receiver/shipped.rs
#            builds it, sharing the dev build's compiled dependencies):
#            scripts/test.sh, where the package and its install are under
#            test, not the optimiser; a deb to ship is built without it
set -euo pipefail
debug=()
case "${1:-}" in
  "") ;;
  --debug) debug=(--debug) ;;
  *) echo "usage: installers/build-receiver-deb.sh [--debug]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
for tool in cargo dpkg-deb dpkg-shlibdeps dpkg; do
  command -v "$tool" >/dev/null || { echo "build-receiver-deb.sh: $tool is missing (apt: dpkg-dev)" >&2; exit 1; }
done

if ((${#debug[@]})); then
  bin=$(CARGO_TARGET_DIR=$target/debug/shipped CARGO_BUILD_BUILD_DIR=$target \
    installers/build-receiver.sh --debug | tail -n 1)
  out=$target/debug/receiver-deb
  # A test's package: quick to pack rather than small.
  compress=(-Zgzip -z1)
else
  bin=$(installers/build-receiver.sh | tail -n 1)
  out=$target/release/receiver-deb
  compress=(-Zxz)
fi
[ -x "$bin" ] || { echo "build-receiver-deb.sh: no binary at $bin" >&2; exit 1; }
version=$("$bin" --version | awk '{ print $2 }')
arch=$(dpkg --print-architecture)
[ -n "$version" ] || { echo "build-receiver-deb.sh: $bin --version said no version" >&2; exit 1; }

stage=$(mktemp -d /tmp/sp-receiver-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/pkg
install -D -m 0755 "$bin" "$pkg/usr/bin/sessionpipe-receiver"
install -D -m 0644 installers/receiver/sessionpipe-receiver.service \
  "$pkg/lib/systemd/system/sessionpipe-receiver.service"
doc=$pkg/usr/share/doc/sessionpipe-receiver
install -D -m 0644 installers/receiver/receiver.env.example "$doc/receiver.env.example"
cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sessionpipe
Files: *
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
for script in postinst prerm postrm; do
  install -D -m 0755 "installers/receiver/deb/$script" "$pkg/DEBIAN/$script"
done

# The shared libraries the binary links (libc, libgcc, OpenSSL for the
# passkeys' crypto), as dpkg-shlibdeps names their packages.
mkdir -p "$stage/debian"
printf 'Source: sessionpipe\n\nPackage: sessionpipe-receiver\nArchitecture: any\n' >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e "$pkg/usr/bin/sessionpipe-receiver" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-receiver-deb.sh: dpkg-shlibdeps named no dependency" >&2; exit 1; }
size=$(du -k -s --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOF
Package: sessionpipe-receiver
Version: $version
Architecture: $arch
Maintainer: sessionpipe
Installed-Size: $size
Depends: $depends, passwd
Section: net
Priority: optional
Description: self-hostable receiver for sessionpipe
 Your machines send it their coding agents' sessions, and your phone reaches
 them through it: a page with passkey sign-in, the board and Web Push, and
 commands signed on your device and relayed to the machine that checks them.
 One process and one SQLite file (or a shared PostgreSQL), HTTPS behind a
 proxy or by itself (--domain gets a certificate over ACME). Runs as the
 hardened systemd unit sessionpipe-receiver.service once
 /etc/sessionpipe-receiver.env says where the page is.
EOF

mkdir -p "$out"
deb=$out/sessionpipe-receiver_${version}_$arch.deb
rm -f "$deb"
dpkg-deb "${compress[@]}" --root-owner-group -b "$pkg" "$deb" >/dev/null
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p' >&2
dpkg-deb --contents "$deb" | awk '{ print $6 }' | grep -v '/$' >&2
echo "$deb"
