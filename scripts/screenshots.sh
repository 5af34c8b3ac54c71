#!/usr/bin/env bash
# Takes the screenshots the README and the book show from what the browser and
# Xvfb tests just wrote (test-artifacts/, not committed) into docs/src/images/
# (committed), as docs/screenshots.tsv lists them. A committed image is
# replaced only when the new one differs visibly (more than 1 % of its pixels
# after a 10 % colour fuzz, or another size): a clock or an id that moved is
# no change, a new label or layout is, and then the tree shows the new picture
# to commit. Fails when an artifact is missing (or older than --since: its test
# no longer takes it), and when a page shows an image the list does not name,
# or the list names one no page shows.
# Usage: scripts/screenshots.sh [--since FILE] [--check | --update]
#   --since FILE  artifacts must be newer than FILE (scripts/test.sh: its start)
#   --check       fail on a visible change instead of copying it (for CI)
#   --update      copy every artifact, changed or not
set -euo pipefail
cd "$(dirname "$0")/.."

since="" mode=sync
while (($#)); do
  case $1 in
    --since) since=$2; shift 2 ;;
    --check) mode=check; shift ;;
    --update) mode=update; shift ;;
    *) echo "usage: scripts/screenshots.sh [--since FILE] [--check | --update]" >&2; exit 2 ;;
  esac
done
command -v compare >/dev/null || { echo "missing: compare (apt: imagemagick)" >&2; exit 1; }

images=docs/src/images
failed=0 listed=() changed=0
while IFS=$'\t' read -r image artifact test; do
  [[ -z "$image" || "$image" == \#* ]] && continue
  listed+=("$image")
  if [ ! -f "$artifact" ]; then
    echo "missing: $artifact (for $images/$image): run $test" >&2
    failed=1
    continue
  fi
  if [ -n "$since" ] && [ ! "$artifact" -nt "$since" ]; then
    echo "stale: $artifact was not written by this run; does $test still take it?" >&2
    failed=1
    continue
  fi
  target=$images/$image
  why=""
  if [ ! -f "$target" ]; then
    why="new"
  elif [ "$mode" = update ]; then
    why="--update"
  elif [ "$(identify -format '%wx%h' "$artifact")" != "$(identify -format '%wx%h' "$target")" ]; then
    why="$(identify -format '%wx%h' "$target") → $(identify -format '%wx%h' "$artifact")"
  else
    # compare prints the count of differing pixels on stderr (exit 1 when
    # any), in exponent form past a million.
    differ=$(compare -metric AE -fuzz 10% "$artifact" "$target" null: 2>&1 || true)
    if ! [[ "$differ" =~ ^[0-9.]+(e\+[0-9]+)?$ ]]; then
      echo "compare failed on $artifact and $target: $differ" >&2
      failed=1
      continue
    fi
    differ=$(printf '%.0f' "$differ")
    size=$(identify -format '%w %h' "$target")
    pixels=$((${size% *} * ${size#* }))
    if ((differ * 100 > pixels)); then
      why="$((differ * 100 / pixels)) % of the pixels differ"
    fi
  fi
  if [ -z "$why" ]; then
    continue
  fi
  if [ "$mode" = check ] && [ -f "$target" ]; then
    echo "changed: $target ($why): scripts/screenshots.sh takes it; commit it" >&2
    failed=1
    continue
  fi
  mkdir -p "$images"
  cp "$artifact" "$target"
  changed=$((changed + 1))
  echo "took $target from $artifact ($why): commit it"
done <docs/screenshots.tsv

# Every picture a page shows is in the list, and every listed one is shown.
shown=$(grep -rhoE 'images/[A-Za-z0-9._-]+\.png' README.md docs/src --include=*.md | sed 's#.*images/##' | sort -u)
for image in $shown; do
  if ! printf '%s\n' "${listed[@]}" | grep -qxF "$image"; then
    echo "unlisted: $image is shown but not in docs/screenshots.tsv (which test takes it?)" >&2
    failed=1
  fi
done
for image in "${listed[@]}"; do
  grep -qxF "$image" <<<"$shown" || { echo "unused: $image is listed but no page shows it" >&2; failed=1; }
done
for file in "$images"/*; do
  [ -e "$file" ] || continue
  printf '%s\n' "${listed[@]}" | grep -qxF "$(basename "$file")" ||
    { echo "unlisted: $file is committed but not in docs/screenshots.tsv" >&2; failed=1; }
done
((failed)) && exit 1
echo "screenshots: ${#listed[@]} current ($changed taken from this run)"
