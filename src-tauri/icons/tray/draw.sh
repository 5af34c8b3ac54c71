#!/usr/bin/env bash
# Draws the tray icon's three states with ImageMagick (64x64, the panel scales them
# down): the app icon's "s" on a rounded square, in slate when idle, in the brand
# blue while an agent works, and in orange with a white badge when one needs you.
# The PNGs are committed; run this only to change them. Needs: imagemagick,
# fonts-dejavu-core. Usage: src-tauri/icons/tray/draw.sh
set -euo pipefail
cd "$(dirname "$0")"
font=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf
[ -f "$font" ] || { echo "draw.sh: $font is missing (apt-get install fonts-dejavu-core)" >&2; exit 1; }

draw() { # name fill [badge]
  local name=$1 fill=$2 badge=${3:-}
  local extra=()
  if [ -n "$badge" ]; then
    extra=(-fill "$badge" -draw "circle 51,12 51,0" -fill white -draw "circle 51,12 51,3")
  fi
  convert -size 64x64 xc:none \
    -fill "$fill" -draw "roundrectangle 2,2 61,61 14,14" \
    -font "$font" -pointsize 44 -fill white -gravity center -annotate +0-5 's' \
    -gravity northwest -fill white \
    -draw "roundrectangle 14,49 49,52 2,2" \
    -fill "$fill" -draw "circle 22,50.5 22,49" -draw "circle 32,50.5 32,49" -draw "circle 42,50.5 42,49" \
    "${extra[@]}" \
    -strip "PNG32:$name.png"
}

draw idle '#7b8494'
draw working '#2f6fdf'
draw needs-you '#e8590c' '#e8590c'
