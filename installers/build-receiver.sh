#!/usr/bin/env bash
# Builds sessionpipe-receiver the way it ships: the package alone and without
# its `test-doors` feature, so the binary has no test doors (every /test/*
# path, and the read door GET /v1/sessions/..., answers 404). A workspace
# build that takes in the tests' dev-dependencies would turn the feature on
# through the test kit: a receiver to ship is built here and nowhere else
# (installers/receiver/Containerfile runs this too).
# receiver/tests/receiver/shipped.rs builds with this script (--debug) and
# checks that the doors are gone.
#
# Needs the page built first (npm ci && npm run build at the repo root):
# the binary carries it.
#
# Usage: installers/build-receiver.sh [--debug]   → prints the binary's path last
#   --debug  the dev profile (tests: what is under test is the feature set,
#            not the optimiser); a receiver to ship is built without it
set -euo pipefail
profile=release
cargo_profile=(--release)
case "${1:-}" in
  "") ;;
  --debug) profile=debug; cargo_profile=() ;;
  *) echo "usage: installers/build-receiver.sh [--debug]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
[ -f receiver/page/dist/index.html ] || {
  echo "build-receiver.sh: receiver/page/dist is missing (npm ci && npm run build at the repo root)" >&2
  exit 1
}
cargo build "${cargo_profile[@]}" --locked --quiet -p sessionpipe-receiver --bin sessionpipe-receiver
echo "$target/$profile/sessionpipe-receiver"
