#!/usr/bin/env bash
# Builds a signed apt repository from one or more .deb files:
#   OUT/pool/main/<p>/<package>/<file>.deb       the packages
#   OUT/dists/SUITE/main/binary-<arch>/Packages  and Packages.gz (apt-ftparchive)
#   OUT/dists/SUITE/Release                      its hashes of those (apt-ftparchive)
#   OUT/dists/SUITE/InRelease, Release.gpg       the Release signed with KEY
#   OUT/sessionpipe-archive-keyring.gpg          KEY's public key, for signed-by=
# and checks both signatures with gpgv against that keyring before it is done.
# OUT's pool/ and dists/ are made anew (beside the old ones, which are replaced
# once the new ones are signed and check): the repository holds the given debs only.
#
# The key is taken from the GnuPG home in $GNUPGHOME (else ~/.gnupg); a key
# with a passphrase is unlocked with $APT_SIGNING_PASSPHRASE. A user adds the
# repository with (the key into /etc/apt/keyrings/, then):
#   deb [signed-by=/etc/apt/keyrings/sessionpipe-archive-keyring.gpg] URL SUITE main
#
# Usage: installers/apt-repo.sh --key KEY --out DIR [--suite stable] DEB...
#   KEY: a fingerprint, key id or user id of a secret key in the GnuPG home
# Needs apt-ftparchive (Debian: apt-utils), gpg and gpgv (gnupg), dpkg-deb.
set -euo pipefail
usage() {
  echo "usage: installers/apt-repo.sh --key KEY --out DIR [--suite stable] DEB..." >&2
  exit 2
}
key=""
out=""
suite=stable
component=main
debs=()
while (($#)); do
  case "$1" in
    --key) key=${2:-}; shift 2 || usage ;;
    --out) out=${2:-}; shift 2 || usage ;;
    --suite) suite=${2:-}; shift 2 || usage ;;
    -*) usage ;;
    *) debs+=("$1"); shift ;;
  esac
done
if [ -z "$key" ] || [ -z "$out" ] || ((${#debs[@]} == 0)); then usage; fi
for tool in apt-ftparchive gpg gpgv dpkg-deb gzip; do
  command -v "$tool" >/dev/null || { echo "apt-repo.sh: $tool is missing (apt: apt-utils gnupg)" >&2; exit 1; }
done
for deb in "${debs[@]}"; do
  [ -f "$deb" ] || { echo "apt-repo.sh: no such deb: $deb" >&2; exit 1; }
done

# The signing key's fingerprint (the first secret key KEY names).
fpr=$({ gpg --batch --with-colons --list-secret-keys -- "$key" 2>/dev/null || true; } | awk -F: '$1 == "fpr" { print $10; exit }')
[ -n "$fpr" ] || { echo "apt-repo.sh: no secret key '$key' in ${GNUPGHOME:-~/.gnupg}" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
new=$out/.new
rm -rf "$new"
mkdir "$new"

# The pool, in Debian's layout (pool/main/s/sessionpipe/...), and the
# architectures the packages are for ("all" goes into each of them).
archs=()
for deb in "${debs[@]}"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  arch=$(dpkg-deb -f "$deb" Architecture)
  dir=$new/pool/$component/${pkg:0:1}/$pkg
  mkdir -p "$dir"
  # A hard link where the deb is on the same file system (it is 60 MB or more).
  ln -f "$deb" "$dir/" 2>/dev/null || cp "$deb" "$dir/"
  [ "$arch" = all ] || [[ " ${archs[*]} " == *" $arch "* ]] || archs+=("$arch")
done
((${#archs[@]})) || archs=(amd64)

cd "$new"
for arch in "${archs[@]}"; do
  index=dists/$suite/$component/binary-$arch
  mkdir -p "$index"
  apt-ftparchive --arch "$arch" packages "pool/$component" >"$index/Packages"
  gzip -9nk "$index/Packages"
  [ -s "$index/Packages" ] || { echo "apt-repo.sh: no packages for $arch" >&2; exit 1; }
done

# The Release, with the hashes of the indexes; written beside them only once
# it is whole (apt-ftparchive reads the directory it is written to).
apt-ftparchive \
  -o APT::FTPArchive::Release::Origin=sessionpipe \
  -o APT::FTPArchive::Release::Label=sessionpipe \
  -o APT::FTPArchive::Release::Suite="$suite" \
  -o APT::FTPArchive::Release::Codename="$suite" \
  -o APT::FTPArchive::Release::Architectures="${archs[*]}" \
  -o APT::FTPArchive::Release::Components="$component" \
  -o APT::FTPArchive::Release::Description="sessionpipe packages" \
  -o APT::FTPArchive::Release::Signed-By="$fpr" \
  release "dists/$suite" >Release.tmp
mv Release.tmp "dists/$suite/Release"

sign() { # sign MODE OUTPUT: MODE is --clearsign or --detach-sign
  # The passphrase (none: empty) from a descriptor, never a prompt.
  gpg --batch --yes --quiet --pinentry-mode loopback --passphrase-fd 3 \
    --local-user "$fpr" --digest-algo SHA512 --armor "$1" -o "$2" "dists/$suite/Release" \
    3<<<"${APT_SIGNING_PASSPHRASE:-}" ||
    { echo "apt-repo.sh: gpg could not sign with $fpr (a key with a passphrase needs APT_SIGNING_PASSPHRASE)" >&2; exit 1; }
}
sign --clearsign "dists/$suite/InRelease"
sign --detach-sign "dists/$suite/Release.gpg"

keyring=$new/sessionpipe-archive-keyring.gpg
gpg --batch --yes --export --export-options export-minimal -o "$keyring" "$fpr"

# What apt will check, checked here first: both signatures, by that keyring.
gpgv --quiet --keyring "$keyring" "dists/$suite/InRelease" 2>/dev/null ||
  { echo "apt-repo.sh: InRelease does not verify against $keyring" >&2; exit 1; }
gpgv --quiet --keyring "$keyring" "dists/$suite/Release.gpg" "dists/$suite/Release" 2>/dev/null ||
  { echo "apt-repo.sh: Release.gpg does not verify against $keyring" >&2; exit 1; }

packages=$(cat dists/"$suite"/"$component"/binary-*/Packages | grep -c '^Package:')
cd "$out"
rm -rf pool dists sessionpipe-archive-keyring.gpg
mv .new/pool .new/dists .new/sessionpipe-archive-keyring.gpg .
rmdir .new
printf 'apt-repo.sh: %s: suite %s, %s, %d package(s), signed by %s\n' \
  "$out" "$suite" "${archs[*]}" "$packages" "$fpr" >&2
