#!/usr/bin/env bash
# Builds the book (docs/, mdBook) into $CARGO_TARGET_DIR/book (default
# target/book) and checks it: every internal link and #anchor of the built
# pages, and every link from README.md into the book, must resolve
# (docs/check-links.py), so a moved page or a renamed heading fails. mdBook is
# pinned and installed from crates.io once, into a cache outside the clone
# that later runs (and fresh clones) reuse; nothing else is downloaded.
# Usage: scripts/book.sh            (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
tools=${XDG_CACHE_HOME:-$HOME/.cache}/sessionpipe/tools
mdbook=$tools/mdbook-$MDBOOK_VERSION/bin/mdbook
if [ ! -x "$mdbook" ]; then
  # Only what `build` needs: no server, no file watcher. About 6 minutes on
  # two busy cores, once.
  echo "installing mdBook $MDBOOK_VERSION from crates.io into $tools (once; about 6 minutes on 2 cores)"
  CARGO_INCREMENTAL=0 cargo install mdbook --version "$MDBOOK_VERSION" --locked --quiet \
    --no-default-features --features search --root "$tools/mdbook-$MDBOOK_VERSION"
fi

out=${CARGO_TARGET_DIR:-target}/book
rm -rf "$out"
"$mdbook" build docs --dest-dir "$(realpath -m "$out")"
/usr/bin/python3 docs/check-links.py --self-test
/usr/bin/python3 docs/check-links.py "$out" README.md
