#!/bin/bash
# Our launch script: environment for the program, then the program itself in its place.
set -euo pipefail
export PYTHONUNBUFFERED=1
exec python3 "$TRAIN" "$@"
