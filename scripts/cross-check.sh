#!/usr/bin/env bash
# Compiles the whole workspace, the tray app and every test, example and bench
# included, for Windows and both Macs, and fails on any error or clippy
# warning: `cargo clippy --workspace --all-targets -- -D warnings` per target.
# Code under cfg(windows) or cfg(target_os = "macos") is otherwise first
# compiled by the release workflow, on a tag. scripts/test.sh runs it.
#
# The rustup toolchain here has no other targets and cannot download them, so
# this uses Debian's rustc-web, cargo-web, rust-web-clippy and rust-web-src
# (in /usr/bin; the project's own toolchain, first on PATH, is not touched):
# the standard library is built from source for each target
# (-Zbuild-std, which needs RUSTC_BOOTSTRAP, set for these commands only).
#
# C code of dependencies:
#   - x86_64-pc-windows-gnu: compiled for real by Debian's mingw-w64 (SQLite,
#     zstd, aws-lc). -gnu rather than the -msvc of the release: no
#     MSVC or Windows SDK exists here, and the Rust code under cfg(windows) is
#     the same for both (nothing in the workspace asks for target_env).
#   - the Apple targets: there is no macOS SDK here, so no C can compile for
#     them. scripts/cross-check-cc.sh stands in for the C compiler (it
#     preprocesses with the host's cc and compiles nothing). The Rust of
#     every crate is checked; the C under it is not (README, "What has never
#     run, per platform").
#   - OpenSSL, which the release compiles into the app on both (vendored, see
#     receiver/Cargo.toml), is not compiled for either: below.
#
# Its target folder lives outside the clone so that a fresh clone's run finds
# the standard library and the dependencies already checked:
# $SESSIONPIPE_CROSS_TARGET, by default ~/.cache/sessionpipe/cross-target
# (about 3 GB for the three targets).
# Usage: scripts/cross-check.sh [TARGET...]   (default: the three below)
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
((${#targets[@]})) || targets=(x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin)
target_dir=${SESSIONPIPE_CROSS_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/sessionpipe/cross-target}

for tool in /usr/bin/cargo /usr/bin/rustc /usr/bin/cargo-clippy /usr/bin/clippy-driver; do
  [ -x "$tool" ] || { echo "cross-check: $tool is missing: apt-get install rustc-web cargo-web rust-web-clippy rust-web-src" >&2; exit 1; }
done
[ -d /usr/lib/rustlib/src/rust/library ] ||
  { echo "cross-check: the standard library's source is missing: apt-get install rust-web-src" >&2; exit 1; }

# openssl-sys (under webauthn-rs) learns OpenSSL's version and features from
# its headers. For these checks it reads the host's (libssl-dev), gathered
# into one folder, rather than compile its vendored copy for each target:
# the Rust above it is what is checked, and the vendored build is the release
# workflow's (on macOS and Windows runners).
openssl_include=$target_dir/host-openssl-include
mkdir -p "$openssl_include/openssl"
ln -sf /usr/include/openssl/*.h /usr/include/"$(uname -m)"-linux-gnu/openssl/*.h "$openssl_include/openssl/"

started=$SECONDS
for target in "${targets[@]}"; do
  t0=$SECONDS
  # Per target, so no setting of one leaks into another.
  var=${target//-/_}
  VAR=${var^^}
  target_env=("${VAR}_OPENSSL_NO_VENDOR=1" "${VAR}_OPENSSL_INCLUDE_DIR=$openssl_include"
    "${VAR}_OPENSSL_LIB_DIR=/usr/lib/$(uname -m)-linux-gnu")
  case $target in
    *-pc-windows-gnu)
      command -v "${target%%-*}-w64-mingw32-gcc" >/dev/null ||
        { echo "cross-check: ${target%%-*}-w64-mingw32-gcc is missing: apt-get install gcc-mingw-w64-x86-64" >&2; exit 1; }
      ;;
    *-apple-darwin)
      target_env+=(
        "CC_$var=$PWD/scripts/cross-check-cc.sh" "CXX_$var=$PWD/scripts/cross-check-cc.sh" "AR_$var=ar"
        # cc would otherwise ask xcrun, which does not exist here, for the SDK.
        "SDKROOT=/nonexistent-macos-sdk"
      )
      ;;
    *) echo "cross-check: no settings for $target" >&2; exit 1 ;;
  esac
  printf 'cross-check: %s\n' "$target"
  # Debian's tools first on PATH (cargo-clippy finds clippy-driver beside
  # it; build scripts find rustc). A cargo or rustup variable of the caller
  # would pick the other toolchain.
  env -u RUSTC_WRAPPER -u RUSTC_WORKSPACE_WRAPPER -u RUSTUP_TOOLCHAIN -u CARGO_BUILD_TARGET \
    -u __CARGO_TESTS_ONLY_SRC_ROOT \
    PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$target_dir" \
    "${target_env[@]}" \
    /usr/bin/cargo clippy --locked --quiet --keep-going -Zbuild-std=std,panic_abort --target "$target" \
    --workspace --all-targets -- -D warnings
  printf 'cross-check: %s clean in %ds\n' "$target" $((SECONDS - t0))
done
printf 'cross-check: %d targets clean in %ds\n' "${#targets[@]}" $((SECONDS - started))
