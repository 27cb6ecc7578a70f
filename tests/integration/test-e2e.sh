#!/usr/bin/env bash
# The end-to-end suite: a whole installation on this machine (cloche-portal,
# one cloche-node on the pool with S3 (s3rver) for L2, cloche-proxy in
# front: tests/lib/stack.sh) and one scripted agent session that uses only
# the public API, the proxy and MCP (tests/e2e/agent-session.mjs): acquire
# -> a page served inside opened by mcp-browser -> an mcp-desktop
# screenshot shows it -> mcp-shell writes a file -> hibernate -> the next
# call wakes it -> file and page intact -> fork 2 -> the children diverge
# -> they go to S3; one wakes from there, one is released there -> release
# all.  Then nothing is left: no sandbox directory, subvolume, checkpoint,
# netns, mount, runsc process or cgroup of theirs on the node, and no S3
# object of theirs (the template's objects stay: later restores use them).
# The daemons stop on SIGTERM with status 0 and logged no error.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/stack.sh

stack_init
check "a portal, a node agent with S3 and a proxy start" stack_up "${CLOCHE_TEST_PREFIX:-t}-e2e-$$" --s3
KEY=$(stack_key agent)
check "the agent has a user key" test "${KEY#ck_}" != "$KEY"

# --- the agent's session -------------------------------------------------
t0=$(now_ms)
node tests/e2e/agent-session.mjs --portal "$PORTAL" --key "$KEY" --out "$STACK_WORK/used.json" 2>&1
echo "# the session took $(($(now_ms) - t0)) ms"

# --- nothing is left -------------------------------------------------------
check "the session used three sandboxes (the parent and two children)" \
	test "$(jq '.sandboxes | length' "$STACK_WORK/used.json" 2>/dev/null)" = 3
mapfile -t nids < <(jq -r '.sandboxes[].node_ids[]' "$STACK_WORK/used.json" 2>/dev/null | sort -u)
check "the node lists no sandbox" wait_for 30 node_lists_none
left=
for id in "${nids[@]}"; do
	gone "$id" || left+=" $id"
	[[ ! -e $CLOCHE_POOL/checkpoints/$id ]] || { left+=" $id(checkpoint)"; echo "# checkpoint left: $id"; }
done
check "no directory, subvolume, checkpoint, netns, mount, runsc process or cgroup of theirs (${#nids[@]} node ids)" \
	test -z "$left" -a "${#nids[@]}" -ge 3
check "no S3 object of theirs is left" test -z "$(s3_keys "$STACK_PRE/sandboxes/")"
check "... and the template's objects are kept" bash -c 's3_keys "$1" | grep -q manifest.json' _ "$STACK_PRE/templates/"
stack_down
tap_exit
