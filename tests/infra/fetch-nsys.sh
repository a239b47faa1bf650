#!/usr/bin/env bash
# Downloads Debian's non-free nsight-systems-target and nsight-systems 2023.4.4 packages (trixie)
# into DEB_DIR, with a private apt state so the machine's own sources stay untouched. The
# packages cannot be installed on bookworm; the tests unpack them with the generated
# install-nsight.sh instead. Usage: fetch-nsys.sh DEB_DIR
set -euo pipefail
deb_dir=${1:?usage: fetch-nsys.sh DEB_DIR}
version='2023.4.4.54~12.4.1-2'
packages=(nsight-systems-target nsight-systems)
mkdir -p "$deb_dir"
have=0
for package in "${packages[@]}"; do
  compgen -G "$deb_dir/${package}_2023.4.4.54*_amd64.deb" >/dev/null && have=$((have + 1))
done
[ "$have" -eq "${#packages[@]}" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] %s trixie non-free contrib\n' "$keyring" "$mirror" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "${packages[@]/%/=$version}")
mv "$work"/*.deb "$deb_dir/"
ls "$deb_dir"
