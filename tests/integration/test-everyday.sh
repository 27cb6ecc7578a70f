#!/usr/bin/env bash
# Everyday commands in a sandbox made by cloche-node, run by the agent user
# through mcp-shell with the official MCP SDK client (tests/e2e/
# everyday-test.mjs): ls, stat, find, cp -a, mv, tar, du, df, ps, top, free,
# symlinks, chmod, python3 with venv and pip, git, jq, zip, file, the
# editors, xdotool, xclip, the fonts, and curl and wget through the egress
# proxy to an allowed server of a test internet (203.0.113.10) that lives in
# a netns of its own.  Each must exit 0 with nothing on stderr.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh
. tests/lib/inet.sh

pre="t-ev-$$"
node_setup "$pre"

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	inet_down
	node_cleanup
}
trap cleanup EXIT

node_preflight

inet_up 203.0.113 "$NODE_WORK"
inet_host files.cloche.test 203.0.113.10
inet_serve "$INET_NS" 203.0.113.10 8080 everyday-server-ok
sleep 0.3
check "the test internet answers from the host" \
	bash -c "curl -s -m 3 http://files.cloche.test:8080/ | grep -q everyday-server-ok"

check "cloche-node starts" node_start
id="$pre-a"
r=$(api POST /v1/sandboxes "{\"id\":\"$id\",\"egress\":{\"allow\":[\"files.cloche.test:8080\"]}}")
check "a sandbox with an allowlist is ready" test "$(status_of "$r")" = 201

sb_in_router "$id" node tests/e2e/everyday-test.mjs --url http://10.0.2.15:8889/mcp \
	--web http://files.cloche.test:8080/ --web-text everyday-server-ok
rc=$?
[[ $rc == 0 ]] || not_ok "the everyday-commands client exited $rc"

r=$(api DELETE "/v1/sandboxes/$id")
check "the sandbox is destroyed (DELETE 200)" test "$(status_of "$r")" = 200
check "nothing of it is left on the node" gone "$id"
check "cloche-node stops on SIGTERM with status 0" node_stop
tap_exit
