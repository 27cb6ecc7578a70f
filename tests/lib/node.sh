# shellcheck shell=bash
# Helpers for the cloche-node integration tests (needs tests/lib/tap.sh;
# tests/lib/sandbox.sh sources this file and adds the sb_ helpers).  node_setup PREFIX makes a work directory, a
# credential and a port; node_start runs the agent with extra options;
# node_cleanup (call it from the EXIT trap) kills it and removes every
# sandbox, netns and directory whose id starts with the prefix.

NODE_BIN=${CLOCHE_BUILD:-${BUILD:-build}}/bin/cloche-node
node_pid=

node_setup() {
	NODE_PRE=$1
	NODE_WORK=$(mktemp -d)
	NODE_PORT=$(free_port)
	NODE_BASE="http://127.0.0.1:$NODE_PORT"
	head -c 32 /dev/urandom | base64 >"$NODE_WORK/cred"
	NODE_CRED=$(cat "$NODE_WORK/cred")
}

# node_start [OPTION...]: starts cloche-node on the default pool and waits
# for /healthz.
node_start() {
	"$NODE_BIN" --port "$NODE_PORT" --credential-file "$NODE_WORK/cred" --pool "$CLOCHE_POOL" \
		--runsc-root "$CLOCHE_RUNSC_ROOT" --connect-socket "$NODE_WORK/node.sock" "$@" \
		>>"$NODE_WORK/node.log" 2>&1 &
	node_pid=$!
	wait_for 10 quiet curl -sf "$NODE_BASE/healthz"
}

# node_stop: SIGTERM, wait up to 10 s; returns the agent's exit status.
node_stop() {
	local rc=0
	[[ -n $node_pid ]] || return 0
	kill -TERM "$node_pid" 2>/dev/null
	wait_for 10 exited "$node_pid"
	wait "$node_pid" 2>/dev/null || rc=$?
	node_pid=
	return "$rc"
}

# node_connect ID PORT: the port-connect path, stdin/stdout relayed (20 s
# at most).
node_connect() {
	timeout 20 "$NODE_BIN" --connect-socket "$NODE_WORK/node.sock" connect "$@"
}

# api METHOD PATH [BODY]: prints "<status> <body>".
# Calls may run in parallel (each has its own body file).
api() {
	local out body
	body=$(mktemp -p "$NODE_WORK" body.XXXXXX)
	out=$(curl -s -m 300 -o "$body" -w '%{http_code}' -X "$1" \
		-H "Authorization: Bearer $NODE_CRED" \
		${3:+-H 'Content-Type: application/json' --data-binary "$3"} "$NODE_BASE$2") || out=000
	printf '%s %s\n' "$out" "$(cat "$body" 2>/dev/null)"
	rm -f "$body"
}

status_of() { cut -d' ' -f1 <<<"$1"; }
body_of() { cut -d' ' -f2- <<<"$1"; }
quiet() { "$@" >/dev/null 2>&1; }

# node_lists_none [JQ]: the agent lists no sandbox (JQ, default
# `.sandboxes | length`, counts those that matter).
node_lists_none() { [[ $(body_of "$(api GET /v1/sandboxes)" | jq "${1:-.sandboxes | length}") == 0 ]]; }

# Nothing of sandbox $1 is left on the node: directory, netns pair, runsc
# process and state, subvolume, cgroups (v1 controllers or v2), mounts.
gone() {
	local id=$1
	[[ ! -e $CLOCHE_POOL/sandboxes/$id ]] || { echo "# dir left: $id" >&2; return 1; }
	[[ ! -e /var/run/netns/S-$id && ! -e /var/run/netns/R-$id ]] || { echo "# netns left: $id" >&2; return 1; }
	! pgrep -f "runsc.*$id" >/dev/null || { echo "# runsc left: $id" >&2; return 1; }
	! btrfs subvolume list "$CLOCHE_POOL" | grep -q "sandboxes/$id/" || { echo "# subvolume left: $id" >&2; return 1; }
	! compgen -G "$CLOCHE_RUNSC_ROOT/${id}_sandbox:*" >/dev/null || { echo "# runsc state left: $id" >&2; return 1; }
	! compgen -G "/sys/fs/cgroup/*/$id" >/dev/null && [[ ! -e /sys/fs/cgroup/$id ]] ||
		{ echo "# cgroup left: $id" >&2; return 1; }
	! grep -q "/sandboxes/$id/" /proc/self/mountinfo || { echo "# mount left: $id" >&2; return 1; }
}

# mcp_call ID PORT TOOL ARGS_JSON: one MCP tool call to sandbox ID through
# the SDK client, from its router netns; prints the result text.
mcp_call() {
	nsenter --net="/var/run/netns/R-$1" node tests/e2e/mcp-call.mjs \
		--url "http://10.0.2.15:$2/mcp" --tool "$3" --args "$4" --timeout-ms 150000
}

# Every line the agent logged is JSON.
node_log_is_json() {
	if grep -v '^{' "$NODE_WORK/node.log" | grep -q .; then
		grep -v '^{' "$NODE_WORK/node.log" | head -5 | sed 's/^/# /' >&2
		return 1
	fi
}

# node_preflight: stops the test (one not-ok line) when the agent is not
# built or there is no template to make sandboxes from.
node_preflight() {
	[[ -x $NODE_BIN ]] || { not_ok "$NODE_BIN is built (make all)"; tap_exit; }
	[[ -n "$(sb_latest_template desktop)" ]] || { not_ok "a desktop template exists (make template)"; tap_exit; }
}

# node_cleanup (the EXIT trap): stops the agent, then removes what is left
# of this test's sandboxes (ids starting with the prefix) through the
# agent's own teardown: one more agent run that DELETEs them.
node_cleanup() {
	local d id left=()
	if [[ -n $node_pid ]]; then
		kill -9 "$node_pid" 2>/dev/null
		wait "$node_pid" 2>/dev/null
		node_pid=
	fi
	for d in "$CLOCHE_POOL"/sandboxes/"$NODE_PRE"-*; do
		[[ -e $d ]] && left+=("$(basename "$d")")
	done
	if ((${#left[@]})) && node_start >/dev/null 2>&1; then
		for id in "${left[@]}"; do api DELETE "/v1/sandboxes/$id" >/dev/null; done
		node_stop
	fi
	for d in /var/run/netns/[SR]-"$NODE_PRE"-*; do
		[[ -e $d ]] && ip netns del "$(basename "$d")" 2>/dev/null
	done
	rm -rf "$NODE_WORK"
}
