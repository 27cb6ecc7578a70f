#!/usr/bin/env bash
# The portal's MCP server (/mcp): sandboxes as tools for an agent that has
# only this endpoint and an API key.  A whole installation on loopback
# (tests/lib/stack.sh: portal, a node agent, the proxy); the pinned MCP
# conformance suite against /mcp with a key (and refused without one); the
# MCP TypeScript SDK client (tests/e2e/portal-mcp-test.mjs): acquire, the
# sandbox's own MCP server through the proxy with the token it was given,
# fork 2, list, hibernate, wake, keepalive, a full node (an acquire that
# waits reports progress and is cancelled), another key sees and touches
# none of it, bad arguments are -32602, release all; nothing is left.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/mcp.sh
. tests/lib/stack.sh

stack_init
check "a portal, a node agent and a proxy start" stack_up "${CLOCHE_TEST_PREFIX:-t}-pmcp-$$"
U1=$(stack_key agent-1)
U2=$(stack_key agent-2)

mkdir -p "$STACK_WORK/conformance"
for s in $MCP_CONFORMANCE_SCENARIOS; do
	CLOCHE_CONFORMANCE_BEARER=$U1 mcp_conformance "$PORTAL/mcp" "$s" "$STACK_WORK/conformance"
done
out=$(CLOCHE_CONFORMANCE_BEARER= mcp_conformance "$PORTAL/mcp" server-initialize "$STACK_WORK/conformance")
check "... and without a key the suite cannot even initialize" grep -q '^not ok' <<<"$out"

node tests/e2e/portal-mcp-test.mjs --portal "$PORTAL" --key "$U1" --other-key "$U2" 2>&1
check "the node holds no sandbox afterwards" wait_for 30 node_lists_none
check "the portal logged every tool call" \
	bash -c '(($(grep -c "\"tools/call\"" "$1/portal.log") >= 10))' _ "$STACK_WORK"
stack_down
tap_exit
