#!/usr/bin/env bash
# The end-to-end suite: a whole installation on this machine (cloche-portal,
# one cloche-node on the pool with S3 (s3rver) for L2, cloche-proxy in
# front) and one scripted agent session that uses only the public API, the
# proxy and MCP (tests/e2e/agent-session.mjs): acquire -> a page served
# inside opened by mcp-browser -> an mcp-desktop screenshot shows it ->
# mcp-shell writes a file -> hibernate -> the next call wakes it -> file and
# page intact -> fork 2 -> the children diverge -> they go to S3; one wakes
# from there, one is released there -> release all.  Then nothing is left:
# no sandbox directory, subvolume, checkpoint, netns, mount, runsc process
# or cgroup of theirs on the node, and no S3 object of theirs (the template's
# objects stay: later restores use them).  The daemons stop on SIGTERM with
# status 0 and logged no error.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh

BUILD=${BUILD:-build}
PORTAL_BIN=$BUILD/bin/cloche-portal
PX=$BUILD/bin/cloche-proxy
S3RVER=tests/e2e/node_modules/.bin/s3rver
AWS=${AWS:-/usr/bin/aws} # Debian's awscli (a pyenv shim may come first on PATH)
D=cloche.localhost
pre="${CLOCHE_TEST_PREFIX:-t}-e2e-$$"
node_setup "$pre"
work=$NODE_WORK
pport=$(free_port) px_port=$(free_port) px_admin=$(free_port) s3_port=$(free_port)
PORTAL=http://127.0.0.1:$pport
portal_pid= px_pid= s3_pid=

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local id
	[[ -z $portal_pid ]] || kill -9 "$portal_pid" 2>/dev/null
	[[ -z $px_pid ]] || kill -9 "$px_pid" 2>/dev/null
	# Whatever the session left on the node (a failed run) goes through
	# the agent's own teardown.
	if [[ -n $node_pid ]] || node_start >/dev/null 2>&1; then
		for id in $(body_of "$(api GET /v1/sandboxes)" | jq -r '.sandboxes[]?.id' 2>/dev/null); do
			api DELETE "/v1/sandboxes/$id" >/dev/null
		done
	fi
	[[ -z $s3_pid ]] || kill "$s3_pid" 2>/dev/null
	node_cleanup
}
trap cleanup EXIT
node_preflight
[[ -x $PORTAL_BIN && -x $PX ]] || { not_ok "$PORTAL_BIN and $PX are built"; tap_exit; }
[[ -x $S3RVER && -x $AWS ]] || { not_ok "s3rver and awscli are installed (scripts/install-deps.sh)"; tap_exit; }

# --- the installation ----------------------------------------------------
NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$work/s3" -a 127.0.0.1 -p "$s3_port" \
	--configure-bucket ckpt >>"$work/s3rver.log" 2>&1 &
s3_pid=$!
export CLOCHE_S3_ACCESS_KEY=S3RVER CLOCHE_S3_SECRET_KEY=S3RVER
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
aws3() { "$AWS" --endpoint-url "http://127.0.0.1:$s3_port" s3api "$@"; }
s3_keys() { aws3 list-objects-v2 --bucket ckpt --prefix "$1" --query 'Contents[].Key' --output text 2>/dev/null | tr '\t' '\n' | grep -v '^None$'; }
export -f aws3 s3_keys api body_of
export NODE_BASE NODE_CRED NODE_WORK
export AWS s3_port
head -c 48 /dev/urandom | base64 | tr -d '\n' >"$work/token.key"
"$PORTAL_BIN" --listen 127.0.0.1 --port "$pport" --db "$work/portal.db" \
	--token-key-file "$work/token.key" --node-credential-file "$work/cred" \
	--proxy-url "http://{port}-{id}.$D:$px_port" --default-template desktop \
	--heartbeat-interval 500ms --ttl-max 1h >>"$work/portal.log" 2>&1 &
portal_pid=$!
"$PX" --listen 127.0.0.1 --port "$px_port" --admin-port "$px_admin" --domain "$D" --workers 1 \
	--portal "$PORTAL" --node-name "$pre" --node-socket "$work/node.sock" \
	--token-key-file "$work/token.key" --node-credential-file "$work/cred" \
	--wait-timeout 120s --report-interval 1s >>"$work/proxy.log" 2>&1 &
px_pid=$!
for ((i = 0; i < 100; i++)); do curl -sf "$PORTAL/healthz" >/dev/null && curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && break; sleep 0.1; done
check "the node agent starts with S3, the portal and the proxy's admin URL" \
	node_start --listen 127.0.0.1 --portal "$PORTAL" --node-name "$pre" --advertise-url "$NODE_BASE" \
	--proxy-domain "$D" --proxy-admin "http://127.0.0.1:$px_admin" --max-sandboxes 6 \
	--s3-endpoint "http://127.0.0.1:$s3_port" --s3-bucket ckpt --s3-prefix "$pre/"
ADMIN=$("$PORTAL_BIN" --db "$work/portal.db" key-create e2e-admin admin)
KEY=$(curl -s -H "Authorization: Bearer $ADMIN" -d '{"name":"agent","role":"user"}' "$PORTAL/sbv1/keys" | jq -r .key)
check "the portal has the node, and a user key for the agent" \
	bash -c 'for ((i = 0; i < 100; i++)); do [[ $(curl -s -H "Authorization: Bearer $1" "$2/sbv1/nodes" | jq "[.nodes[] | select(.state == \"up\")] | length") == 1 ]] && [[ $3 == ck_* ]] && exit 0; sleep 0.1; done; exit 1' \
	_ "$ADMIN" "$PORTAL" "$KEY"

# --- the agent's session -------------------------------------------------
t0=$(now_ms)
node tests/e2e/agent-session.mjs --portal "$PORTAL" --key "$KEY" --out "$work/used.json" 2>&1
echo "# the session took $(($(now_ms) - t0)) ms"

# --- nothing is left -------------------------------------------------------
check "the session used three sandboxes (the parent and two children)" \
	test "$(jq '.sandboxes | length' "$work/used.json" 2>/dev/null)" = 3
mapfile -t nids < <(jq -r '.sandboxes[].node_ids[]' "$work/used.json" 2>/dev/null | sort -u)
check "the node lists no sandbox" \
	bash -c 'for ((i = 0; i < 300; i++)); do [[ $(body_of "$(api GET /v1/sandboxes)" | jq ".sandboxes | length") == 0 ]] && exit 0; sleep 0.1; done; exit 1'
left=
for id in "${nids[@]}"; do
	gone "$id" || left+=" $id"
	[[ ! -e $CLOCHE_POOL/checkpoints/$id ]] || { left+=" $id(checkpoint)"; echo "# checkpoint left: $id"; }
done
check "no directory, subvolume, checkpoint, netns, mount, runsc process or cgroup of theirs (${#nids[@]} node ids)" \
	test -z "$left" -a "${#nids[@]}" -ge 3
check "no S3 object of theirs is left" test -z "$(s3_keys "$pre/sandboxes/")"
check "... and the template's objects are kept" bash -c 's3_keys "$1" | grep -q manifest.json' _ "$pre/templates/"

# --- the daemons stop cleanly ------------------------------------------------
check "the node agent stops on SIGTERM with status 0" node_stop
kill -TERM "$px_pid"
wait "$px_pid"
check "cloche-proxy stops on SIGTERM with status 0" test $? = 0
px_pid=
kill -TERM "$portal_pid"
wait "$portal_pid"
check "cloche-portal stops on SIGTERM with status 0" test $? = 0
portal_pid=
check "no daemon logged an error" \
	bash -c '! grep -h "\"level\":\"error\"" "$1"/portal.log "$1"/proxy.log "$1"/node.log' _ "$work"
tap_exit
