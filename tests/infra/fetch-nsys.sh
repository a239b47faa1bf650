#!/usr/bin/env bash
# Downloads Debian's non-free nsight-systems-target and nsight-systems 2023.4.4 packages (trixie)
# into DEB_DIR, with a private apt state so the machine's own sources stay untouched. The
# packages cannot be installed on bookworm; the tests unpack them with the generated
# install-nsight.sh instead. The Debian mirror is the one this machine's apt already uses: the
# repository names no package-mirror host of its own.
# Usage: fetch-nsys.sh DEB_DIR | fetch-nsys.sh --print-mirror
# APT_CONFIG (apt's own variable) points at other apt configuration; FETCH_NSYS_APT_ROOT=DIR
# reads DIR/etc/apt/sources.list{,.d} instead, without asking apt (for tests).
set -euo pipefail

# Where this machine's apt reads its sources: sets apt_list and apt_parts.
apt_source_paths() {
  apt_list=/etc/apt/sources.list
  apt_parts=/etc/apt/sources.list.d/
  if [ -n "${FETCH_NSYS_APT_ROOT:-}" ]; then
    apt_list=$FETCH_NSYS_APT_ROOT$apt_list
    apt_parts=$FETCH_NSYS_APT_ROOT$apt_parts
  elif command -v apt-config >/dev/null; then
    # apt-config knows where apt looks (Dir, Dir::Etc, APT_CONFIG); its output is quoted for eval.
    eval "$(apt-config shell apt_list Dir::Etc::SourceList/f apt_parts Dir::Etc::SourceParts/d)"
  fi
  apt_parts=${apt_parts%/}
}

# The source files in the order apt reads them: sources.list, then the parts folder by name.
apt_source_files() {
  local file
  if [ -f "$apt_list" ]; then
    printf '%s\n' "$apt_list"
  fi
  for file in "$apt_parts"/*.list "$apt_parts"/*.sources; do
    if [ -f "$file" ]; then
      printf '%s\n' "$file"
    fi
  done | LC_ALL=C sort
}

# The URI of every enabled `deb` source whose path ends in /debian: the Debian archive itself
# (not debian-security, not a third-party repository), in apt's order.
debian_mirrors() {
  local file
  while IFS= read -r file; do
    case $file in
      *.sources)
        # deb822: paragraphs of `Field: value`; keys are case-insensitive; `Enabled: no` skips.
        awk 'BEGIN { RS = ""; FS = "\n" }
          {
            types = ""; uris = ""; enabled = "yes"
            for (i = 1; i <= NF; i++) {
              if ($i ~ /^#/) continue
              key = tolower($i); sub(/:.*/, "", key)
              value = $i; sub(/^[^:]*:[ \t]*/, "", value)
              if (key == "types") types = " " value " "
              else if (key == "uris") uris = value
              else if (key == "enabled") enabled = tolower(value)
            }
            if (types !~ /[ \t]deb[ \t]/ || enabled == "no") next
            n = split(uris, list, /[ \t]+/)
            for (i = 1; i <= n; i++) if (list[i] ~ /\/debian\/?$/) print list[i]
          }' "$file"
        ;;
      *)
        # One-line format: deb [options] URI SUITE COMPONENT...
        sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$file" |
          awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2 }'
        ;;
    esac
  done
}

find_mirror() {
  local mirror
  apt_source_paths
  # awk reads every line (no early close of the pipe, which pipefail would report).
  mirror=$(apt_source_files | debian_mirrors | awk 'NR == 1 { sub("/$", ""); print }')
  if [ -z "$mirror" ]; then
    echo "fetch-nsys.sh: no Debian archive mirror in this machine's apt sources" \
      "($apt_list, $apt_parts/*.list, $apt_parts/*.sources): need an enabled 'deb' source" \
      "whose URI ends in /debian; add one to the apt sources" >&2
    return 1
  fi
  printf '%s\n' "$mirror"
}

if [ "${1:-}" = --print-mirror ]; then
  find_mirror
  exit
fi
deb_dir=${1:?usage: fetch-nsys.sh DEB_DIR | fetch-nsys.sh --print-mirror}
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
mirror=$(find_mirror)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] %s trixie non-free contrib\n' "$keyring" "$mirror" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq download "${packages[@]/%/=$version}")
mv "$work"/*.deb "$deb_dir/"
ls "$deb_dir"
