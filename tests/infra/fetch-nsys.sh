#!/usr/bin/env bash
# Fetches Debian's non-free nsight-systems{-target,} 2023.4.4 packages (trixie) with a private apt
# state, so the machine's own sources stay untouched, and unpacks them (they cannot be installed on
# bookworm). Usage: fetch-nsys.sh DEST   -> DEST/usr/lib/x86_64-linux-gnu/nsight-systems/...
set -euo pipefail
dest=${1:?usage: fetch-nsys.sh DEST}
version='2023.4.4.54~12.4.1-2'
nsys="$dest/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys"
importer="$dest/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter"
if [ -x "$nsys" ] && [ -x "$importer" ]; then
  echo "nsys already unpacked: $nsys"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] %s trixie non-free contrib\n' "$keyring" "$mirror" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq download \
   "nsight-systems-target=$version" "nsight-systems=$version")
mkdir -p "$dest"
for deb in "$work"/*.deb; do dpkg -x "$deb" "$dest"; done
"$nsys" --version
