#!/usr/bin/env bash
# Build (once per machine and Kubernetes version; cached) and start etcd and
# kube-apiserver on loopback.  Prints `export ALLOC_K8S_...=...` lines for
# eval; where the control plane cannot be built it prints
# `export ALLOC_K8S_SKIP=...` (one line saying why) and the tests skip.
# Usage: eval "$(tests/k8s/start.sh [--scheduler])"
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
why=$(python3 "$here/controlplane.py" reason)
if [ -n "$why" ]; then
    printf 'export ALLOC_K8S_SKIP=%q\n' "$why"
    exit 0
fi
err=$(mktemp)
out=$(python3 "$here/controlplane.py" start --build "$@" 2>"$err")
rc=$?
cat "$err" >&2
if [ "$rc" -eq 3 ]; then          # impossible here: the tests skip, saying why
    printf 'export ALLOC_K8S_SKIP=%q\n' "$(tail -n 1 "$err")"
    rm -f "$err"
    exit 0
fi
rm -f "$err"
[ "$rc" -eq 0 ] || exit "$rc"     # a failure that is not impossibility: the tests fail
echo "$out"
