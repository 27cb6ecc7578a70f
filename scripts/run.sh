#!/usr/bin/env bash
# `make run`: installs what is needed, builds, builds the desktop template,
# starts the all-in-one appliance in the background and prints where to go.
# Today the appliance is one node-local sandbox reached through loopback
# port forwards; the portal and proxy replace the forwards as they land.
#
#   CLOCHE_NOVNC_PORT (6080)  CLOCHE_VNC_PORT (5900)  CLOCHE_HEALTH_PORT (18080)
#   CLOCHE_SHELL_PORT (8889)  CLOCHE_DESKTOP_PORT (8100)  CLOCHE_BROWSER_PORT (7999)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/sandbox.sh
. scripts/lib/forward.sh

id=${CLOCHE_RUN_ID:-local}
say() { echo "cloche: $*" >&2; }

scripts/install-deps.sh
say "building"
make -s -j2 all >/dev/null
template=$(rootfs/build-template.sh | tail -n 1)

if [[ $(sb_state "$id" 2>/dev/null) == running ]]; then
	say "sandbox $id is already running"
else
	sb_down "$id" >/dev/null 2>&1 || true
	say "starting sandbox $id from $(basename "$template") (Chromium under gVisor takes a few seconds)"
	sb_up "$id" "$template"
	sb_wait_ready "$id" 180
fi

secret=$(sb_vnc_secret "$id")
fw_start "$id" "${CLOCHE_NOVNC_PORT:-6080}" 6080
fw_start "$id" "${CLOCHE_VNC_PORT:-5900}" 5900
fw_start "$id" "${CLOCHE_HEALTH_PORT:-18080}" 8080
fw_start "$id" "${CLOCHE_SHELL_PORT:-8889}" 8889
fw_start "$id" "${CLOCHE_DESKTOP_PORT:-8100}" 8100
fw_start "$id" "${CLOCHE_BROWSER_PORT:-7999}" 7999

cat <<MSG

cloche is running (sandbox $id).
  Desktop in a browser (noVNC):  http://127.0.0.1:${CLOCHE_NOVNC_PORT:-6080}/?secret=$secret
  VNC client:                    127.0.0.1:${CLOCHE_VNC_PORT:-5900}  (e.g. vncviewer 127.0.0.1::${CLOCHE_VNC_PORT:-5900}; password ${secret:0:8})
  MCP servers (Streamable HTTP): shell   http://127.0.0.1:${CLOCHE_SHELL_PORT:-8889}/mcp
                                 desktop http://127.0.0.1:${CLOCHE_DESKTOP_PORT:-8100}/mcp   (computer use)
                                 browser http://127.0.0.1:${CLOCHE_BROWSER_PORT:-7999}/mcp   (playwright-mcp style tools)
  Health:                        http://127.0.0.1:${CLOCHE_HEALTH_PORT:-18080}/health
  Logs:                          $(sb_dir "$id")/console.log
  Stop:                          make stop
MSG
