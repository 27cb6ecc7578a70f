#!/usr/bin/env bash
# The three MCP servers of one booted sandbox, as an agent meets them: the
# MCP conformance suite (server-initialize, ping, tools-list,
# dns-rebinding-protection) against mcp-shell, mcp-desktop and mcp-browser
# inside gVisor, then tests/e2e/mcp-e2e-test.mjs drives browser, desktop
# and shell together through the official SDK client.  All clients run in
# the sandbox's router netns, where a proxy would connect from.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/mcp.sh
. tests/lib/sandbox.sh

template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
id="t-mcp-$$"
work=$(mktemp -d)
fw_pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[[ ${#fw_pids[@]} == 0 ]] || kill "${fw_pids[@]}" 2>/dev/null
	sb_down "$id" >/dev/null 2>&1
	sb_agent_stop
	rm -rf "$work"
}
trap cleanup EXIT

[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; tap_exit; }
check "sandbox boots" sb_up "$id" "$template"
check "health turns ready with every MCP server" sb_wait_ready "$id" 180

# The suite's DNS-rebinding scenario only speaks to a localhost URL, so in
# the router netns each server is also forwarded from 127.0.0.1 (the way a
# local proxy would front it); the suite then checks that Host/Origin
# evil.example.com is refused while localhost is served.
for port in 8889 8100 7999; do
	# nsenter itself (it execs socat), so $! is the listener to kill.
	nsenter --net="/var/run/netns/R-$id" socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
		"TCP:$SB_INNER_ADDR:$port" </dev/null >/dev/null 2>&1 &
	fw_pids+=($!)
done
sleep 0.3
for port in 8889 8100 7999; do
	for s in $MCP_CONFORMANCE_SCENARIOS; do
		mcp_conformance "http://localhost:$port/mcp" "$s" "$work" sb_in_router "$id"
	done
done
kill "${fw_pids[@]}" 2>/dev/null

sb_in_router "$id" node tests/e2e/mcp-e2e-test.mjs --host "$SB_INNER_ADDR"
rc=$?
[[ $rc == 0 ]] || not_ok "MCP end-to-end script exited $rc"
tap_exit
