# shellcheck shell=bash
# A whole cloche installation on loopback for the end-to-end tests (needs
# tests/lib/tap.sh; sources tests/lib/sandbox.sh): cloche-portal, one cloche-node
# on the pool (heartbeating to the portal, with the proxy's admin URL and,
# with --s3, an S3 API server (s3rver) for L2) and cloche-proxy in front.
#
#   stack_init               what a suite does first: stack_cleanup as the EXIT
#                            trap, and node_preflight
#   stack_up PREFIX [--s3]   starts them; sets PORTAL (URL), ADMIN (an admin key),
#                            STACK_NODE_OPTS (array) adds options of the node agent,
#                            STACK_WORK, and with --s3 the aws3/s3_keys helpers
#   stack_key NAME           prints a new user key
#   stack_portal_stop / stack_portal_start   SIGTERM the portal (its status) / start
#                            it again on the same port and database
#   stack_down               SIGTERM to the daemons, checking each exits 0 and
#                            logged no error (ok/not ok lines)
#   stack_cleanup            the EXIT trap: kills what runs, removes every
#                            sandbox the node still has
# Sandbox URLs are http://{port}-{id}.cloche.localhost:<proxy port>.
#
# Not built on scripts/lib/aio.sh (make run's appliance: fixed ports, system
# directories, detached daemons with pid files; see there) and not the base
# of tests/lib/cluster.sh (agents in network namespaces on their own pools;
# see there).  The agent here is tests/lib/node.sh's, on the machine's pool.

# shellcheck source=tests/lib/sandbox.sh
. "$(dirname "${BASH_SOURCE[0]}")/sandbox.sh"
STACK_PORTAL_BIN=${BUILD:-build}/bin/cloche-portal
STACK_PROXY_BIN=${BUILD:-build}/bin/cloche-proxy
# shellcheck source=tests/lib/s3.sh
. "$(dirname "${BASH_SOURCE[0]}")/s3.sh"
AWS=${AWS:-/usr/bin/aws} # Debian's awscli (a pyenv shim may come first on PATH)
STACK_DOMAIN=cloche.localhost
stack_portal_pid= stack_px_pid= stack_s3_pid=
STACK_NODE_OPTS=()

aws3() { "$AWS" --endpoint-url "http://127.0.0.1:$STACK_S3_PORT" s3api "$@"; }
# s3_keys PREFIX: the object keys under PREFIX, one a line.
s3_keys() {
	aws3 list-objects-v2 --bucket ckpt --prefix "$1" --query 'Contents[].Key' --output text 2>/dev/null |
		tr '\t' '\n' | grep -v '^None$'
}

stack_init() {
	trap stack_cleanup EXIT
	node_preflight
}

stack_up() {
	local pre=$1 s3=${2:-} pport px_admin
	node_setup "$pre"
	STACK_PRE=$pre
	STACK_WORK=$NODE_WORK
	pport=$(free_port) STACK_PX_PORT=$(free_port) px_admin=$(free_port)
	PORTAL=http://127.0.0.1:$pport
	local node_s3=()
	if [[ $s3 == --s3 ]]; then
		[[ -x $S3RVER && -x $AWS ]] || { echo "# s3rver and awscli are needed (scripts/install-deps.sh)"; return 1; }
		STACK_S3_PORT=$(free_port)
		s3rver_start "$STACK_WORK/s3" "$STACK_S3_PORT" ckpt "$STACK_WORK/s3rver.log"
		stack_s3_pid=$S3RVER_PID
		export CLOCHE_S3_ACCESS_KEY=S3RVER CLOCHE_S3_SECRET_KEY=S3RVER
		CLOCHE_S3_SEAL_KEY=$(head -c 32 /dev/urandom | base64)
		export CLOCHE_S3_SEAL_KEY
		export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
		export AWS STACK_S3_PORT
		export -f aws3 s3_keys
		node_s3=(--s3-endpoint "http://127.0.0.1:$STACK_S3_PORT" --s3-bucket ckpt --s3-prefix "$pre/")
	fi
	head -c 48 /dev/urandom | base64 | tr -d '\n' >"$STACK_WORK/token.key"
	STACK_PORTAL_PORT=$pport
	stack_portal_start
	"$STACK_PROXY_BIN" --listen 127.0.0.1 --port "$STACK_PX_PORT" --admin-port "$px_admin" \
		--domain "$STACK_DOMAIN" --workers 1 --portal "$PORTAL" --node-name "$pre" \
		--node-socket "$STACK_WORK/node.sock" --token-key-file "$STACK_WORK/token.key" \
		--node-credential-file "$STACK_WORK/cred" --wait-timeout 120s --report-interval 1s \
		>>"$STACK_WORK/proxy.log" 2>&1 &
	stack_px_pid=$!
	wait_for 10 curl -sf -o /dev/null "$PORTAL/healthz"
	node_start --listen 127.0.0.1 --portal "$PORTAL" --node-name "$pre" --advertise-url "$NODE_BASE" \
		--proxy-domain "$STACK_DOMAIN" --proxy-admin "http://127.0.0.1:$px_admin" --max-sandboxes 6 \
		"${node_s3[@]}" "${STACK_NODE_OPTS[@]}" || { echo "# cloche-node did not start: $STACK_WORK/node.log"; return 1; }
	export -f api body_of
	export NODE_BASE NODE_CRED NODE_WORK PORTAL
	ADMIN=$("$STACK_PORTAL_BIN" --db "$STACK_WORK/portal.db" key-create stack-admin admin) || return 1
	wait_for 10 stack_node_up && return 0
	echo "# the node did not register with the portal"
	return 1
}

# The portal lists the node as up.
stack_node_up() {
	[[ $(curl -s -H "Authorization: Bearer $ADMIN" "$PORTAL/sbv1/nodes" |
		jq '[.nodes[] | select(.state == "up")] | length') == 1 ]]
}

stack_portal_start() {
	"$STACK_PORTAL_BIN" --listen 127.0.0.1 --port "$STACK_PORTAL_PORT" --db "$STACK_WORK/portal.db" \
		--token-key-file "$STACK_WORK/token.key" --node-credential-file "$STACK_WORK/cred" \
		--proxy-url "http://{port}-{id}.$STACK_DOMAIN:$STACK_PX_PORT" --default-template desktop \
		--heartbeat-interval 500ms --ttl-max 1h >>"$STACK_WORK/portal.log" 2>&1 &
	stack_portal_pid=$!
	wait_for 10 curl -sf -o /dev/null "$PORTAL/healthz"
}

stack_portal_stop() {
	kill -TERM "$stack_portal_pid"
	wait "$stack_portal_pid"
	local rc=$?
	stack_portal_pid=
	return "$rc"
}

stack_key() {
	curl -s -H "Authorization: Bearer $ADMIN" -d "{\"name\":\"$1\",\"role\":\"user\"}" "$PORTAL/sbv1/keys" |
		jq -r .key
}

stack_down() {
	check "the node agent stops on SIGTERM with status 0" node_stop
	kill -TERM "$stack_px_pid"
	wait "$stack_px_pid"
	check "cloche-proxy stops on SIGTERM with status 0" test $? = 0
	stack_px_pid=
	check "cloche-portal stops on SIGTERM with status 0" stack_portal_stop
	check "no daemon logged an error" \
		bash -c '! grep -h "\"level\":\"error\"" "$1"/portal.log "$1"/proxy.log "$1"/node.log' _ "$STACK_WORK"
}

# shellcheck disable=SC2317  # called by the EXIT trap
stack_cleanup() {
	local id
	[[ -z $stack_portal_pid ]] || kill -9 "$stack_portal_pid" 2>/dev/null
	[[ -z $stack_px_pid ]] || kill -9 "$stack_px_pid" 2>/dev/null
	# What a failed run left on the node goes through the agent's own
	# teardown; one still starting (a warm member being made) answers 409
	# until it is ready, so this goes on until the list is empty (60 s).
	if [[ -n $node_pid ]] || node_start >/dev/null 2>&1; then
		local i left
		for ((i = 0; i < 60; i++)); do
			left=$(body_of "$(api GET /v1/sandboxes)" | jq -r '.sandboxes[]?.id' 2>/dev/null)
			[[ -n $left ]] || break
			for id in $left; do api DELETE "/v1/sandboxes/$id" >/dev/null; done
			sleep 1
		done
	fi
	[[ -z $stack_s3_pid ]] || kill "$stack_s3_pid" 2>/dev/null
	node_cleanup
}
