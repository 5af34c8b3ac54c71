#!/usr/bin/env bash
# Builds the sessionpipe deb with the Tauri bundler: sessionpipe-app (the tray),
# sessionpipe-window (its window), sessionpipe and sessionpipe-hook in /usr/bin
# (the hook at a stable path, so hooks written by one version keep working after
# an upgrade), the UI's files in
# /usr/share/sessionpipe/ui (where the daemon looks: <exe>/../share/sessionpipe/ui),
# a desktop entry and the icons.
#
# Steps: the UI (ui/, npm ci + build), the CLI and the hook in release, copied to
# src-tauri/binaries/ with the target triple Tauri's externalBin expects, then
# `tauri build --bundles deb` with installers/tauri.bundle.json (the two binaries)
# and installers/tauri.deb.json (the UI's files) merged over src-tauri/tauri.conf.json.
# The Tauri CLI is the npm one pinned in installers/package.json.
#
# Usage: installers/build-deb.sh [--ui-built] [--debug]   → prints the .deb's path last
#   --ui-built  take ui/dist as it is (scripts/test.sh has just built it)
#   --debug     package the dev profile's binaries (scripts/test.sh: the package
#               and its install are under test, not the optimiser, and the dev
#               build is already there); a deb to ship is built without it
set -euo pipefail
ui_built=false
profile=release
for arg in "$@"; do
  case "$arg" in
    --ui-built) ui_built=true ;;
    --debug) profile=debug ;;
    *) echo "usage: installers/build-deb.sh [--ui-built] [--debug]" >&2; exit 2 ;;
  esac
done
cargo_profile=(--release)
tauri_profile=()
if [ "$profile" = debug ]; then
  cargo_profile=()
  tauri_profile=(--debug)
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}

for tool in cargo rustc npm node dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "build-deb.sh: $tool is missing" >&2; exit 1; }
done
if ! pkg-config --exists webkit2gtk-4.1 ayatana-appindicator3-0.1 2>/dev/null; then
  echo "build-deb.sh: the Tauri build packages are missing (apt: libwebkit2gtk-4.1-dev libayatana-appindicator3-dev, see README)" >&2
  exit 1
fi

say() { printf '\n== %s\n' "$*" >&2; }

if $ui_built; then
  [ -f ui/dist/index.html ] || { echo "build-deb.sh: --ui-built, but ui/dist/index.html is missing" >&2; exit 1; }
else
  say "the UI (ui/dist)"
  (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent) >&2
fi

say "sessionpipe and sessionpipe-hook ($profile)"
cargo build "${cargo_profile[@]}" --quiet -p sessionpipe-core -p sessionpipe-hook --bins
triple=$(rustc -vV | sed -n 's/^host: //p')
mkdir -p src-tauri/binaries
for bin in sessionpipe sessionpipe-hook; do
  install -m 0755 "$target/$profile/$bin" "src-tauri/binaries/$bin-$triple"
done

say "the Tauri CLI (installers/package.json)"
(cd installers && npm ci --no-audit --no-fund --loglevel=error) >&2

say "tauri build --bundles deb"
rm -rf "$target/$profile/bundle/deb"
(cd src-tauri && ../installers/node_modules/.bin/tauri build --ci "${tauri_profile[@]}" --bundles deb \
  --config ../installers/tauri.bundle.json --config ../installers/tauri.deb.json) >&2

deb=$(ls "$target"/"$profile"/bundle/deb/*.deb)
say "contents"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p' >&2
dpkg-deb --contents "$deb" | awk '{print $6}' | grep -v '/$' | grep -v '^./usr/share/sessionpipe/ui/assets/' >&2
echo "$deb"
