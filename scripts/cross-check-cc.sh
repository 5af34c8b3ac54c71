#!/usr/bin/env bash
# The C compiler scripts/cross-check.sh hands the build scripts of dependencies
# when it checks the workspace for macOS, where no C can be compiled: this
# machine has no macOS SDK (no system headers, no frameworks). It stands in
# for clang so that those build scripts finish and the Rust above them is
# checked; it compiles no C for macOS and must never be used to build
# anything that runs.
#   - preprocessing (-E), which some build scripts read (openssl-sys learns the
#     OpenSSL version and features from headers this way), is done by the host's
#     cc with only the include paths, defines and input kept: portable headers
#     preprocess the same for any target;
#   - compiling (-c) writes an object file with nothing in it (an empty C file
#     compiled by the host's cc), so `cargo check`'s build scripts can archive
#     it; nothing links in check mode;
#   - a call that names a source or an output (a feature probe that links)
#     succeeds and leaves an empty output file where one was asked for; one
#     that names neither (`-?`, which cc asks to tell MSVC's clang-cl apart)
#     fails, as it would for clang.
# Usage: set as CC_<target> and CXX_<target> for an Apple target.
set -euo pipefail

mode=link out="" keep=() inputs=()
while (($#)); do
  case "$1" in
    -E) mode=preprocess ;;
    -c | -S) [ "$mode" = preprocess ] || mode=compile ;;
    -o) out=$2; shift ;;
    -o*) out=${1#-o} ;;
    -I | -D | -U | -include) keep+=("$1" "$2"); shift ;;
    -I* | -D* | -U*) keep+=("$1") ;;
    # Flags whose value is the next word.
    -arch | -x | -target | -isysroot | -MF | -MT | -MQ | -Xlinker | -Xclang | -framework | -L | -l) shift ;;
    --version | -v | -dumpversion | -dumpmachine) exec cc "$1" ;;
    -*) ;;
    *) inputs+=("$1") ;;
  esac
  shift
done

if ((${#inputs[@]} == 0)) && [ -z "$out" ]; then
  exit 1
fi
case $mode in
  preprocess)
    if [ -n "$out" ]; then
      exec cc -E "${keep[@]}" "${inputs[@]}" -o "$out"
    fi
    exec cc -E "${keep[@]}" "${inputs[@]}"
    ;;
  compile)
    [ -n "$out" ] || out=$(basename "${inputs[0]%.*}").o
    exec cc -c -x c /dev/null -o "$out"
    ;;
  link)
    [ -z "$out" ] || : >"$out"
    ;;
esac
