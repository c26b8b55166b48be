#!/usr/bin/env bash
# Stop what start.sh started (ALLOC_K8S_RUN, or the folder given) and remove its folder.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/controlplane.py" stop "${1:-${ALLOC_K8S_RUN:-}}"
