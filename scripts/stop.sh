#!/usr/bin/env bash
# `make stop`: stops what `make run` started: the port forwards and the
# sandbox (its container, netns pair and rootfs snapshot).  Templates stay.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/sandbox.sh
. scripts/lib/forward.sh

id=${CLOCHE_RUN_ID:-local}
fw_stop_all "$id"
sb_down "$id"
echo "cloche: stopped sandbox $id" >&2
