#!/usr/bin/env bash
# Stand-in for QdstrmImporter during the teardown measurements: sleeps SLOW_IMPORT seconds before
# a conversion (not before --version), as a large report's import would, then runs the real one
# (QdstrmImporter.real next to it).
set -euo pipefail
case " $* " in
  *" --version "* | *" -v "*) ;;
  *) sleep "${SLOW_IMPORT:-0}" ;;
esac
exec "$(dirname "$0")/QdstrmImporter.real" "$@"
