# shellcheck shell=bash
# Several cloche-node agents on one machine, for the portal's tests and
# benchmarks (needs tests/lib/tap.sh).  Each node is a network namespace
# "host" with its own address on a bridge in the root namespace, its own
# pool directory (a plain directory on the btrfs pool holding read-only
# snapshots of the templates), runsc root, connect socket and log.  Agents
# run with `nsenter --net` so they stay in the root mount namespace (the
# netns files they make are the machine's).
#
#   cluster_up PREFIX N TEMPLATE_DIR...   bridge, N hosts and pools (no agents yet)
#   cluster_start I [OPTION...]           agent I (1..N) on 10.89.0.1I:7070, heartbeating
#                                         to $CLUSTER_PORTAL_URL; extra options after
#   cluster_kill I / cluster_stop I       SIGKILL / SIGTERM (waits) agent I
#   cluster_api I METHOD PATH [BODY]      node I's API: prints "<status> <body>"
#   cluster_down                          agents, every sandbox they made, pools, hosts, bridge
#   cluster_template_mini SRC POOL        a read-only mini@<digest> from a desktop template:
#                                         cloche-init runs only mcp-shell (boots in ~1 s)
# Variables: CLUSTER_WORK (credential `cred`, logs n<I>.log), CLUSTER_CRED, CLUSTER_BR_IP
# (10.89.0.1: give the portal this address), CLUSTER_POOL_<I> via cluster_pool I.
#
# cluster_start is not tests/lib/node.sh's node_start (which tests/lib/stack.sh
# uses): every parameter of the agent differs (entered with nsenter, its host's
# address on port 7070, its own pool, runsc root, socket and log, the shared
# credential, its node name and heartbeat); what they share, the health wait,
# is tap.sh's wait_for.  Nor is the portal stack.sh's: test-portal.sh starts
# its own on the bridge address, with the cluster's credential and its
# limits, and a proxy in every host.  scripts/lib/aio.sh says why make run's
# appliance is a third start-up.

CLUSTER_NODE_BIN=${CLOCHE_BUILD:-${BUILD:-build}}/bin/cloche-node
CLUSTER_BR_IP=10.89.0.1
CLUSTER_N=0
CLUSTER_PREFIX=
declare -a CLUSTER_PID=()

cluster_pool() { echo "${CLOCHE_POOL:-/var/lib/cloche}/pools/$CLUSTER_PREFIX-n$1"; }
cluster_host() { echo "$CLUSTER_PREFIX-h$1"; }
cluster_ip() { echo "10.89.0.$((10 + $1))"; }
cluster_url() { echo "http://$(cluster_ip "$1"):7070"; }

cluster_up() {
	local i t
	CLUSTER_PREFIX=$1
	CLUSTER_N=$2
	shift 2
	CLUSTER_WORK=$(mktemp -d)
	head -c 32 /dev/urandom | base64 >"$CLUSTER_WORK/cred"
	CLUSTER_CRED=$(cat "$CLUSTER_WORK/cred")
	CLUSTER_BR=cb-$CLUSTER_PREFIX
	ip link add "$CLUSTER_BR" type bridge || return 1
	ip addr add "$CLUSTER_BR_IP/24" dev "$CLUSTER_BR" && ip link set "$CLUSTER_BR" up || return 1
	for ((i = 1; i <= CLUSTER_N; i++)); do
		ip netns add "$(cluster_host "$i")" || return 1
		ip link add "cv-$CLUSTER_PREFIX$i" type veth peer name eth0 netns "$(cluster_host "$i")" || return 1
		ip link set "cv-$CLUSTER_PREFIX$i" master "$CLUSTER_BR" up || return 1
		ip -n "$(cluster_host "$i")" addr add "$(cluster_ip "$i")/24" dev eth0 || return 1
		ip -n "$(cluster_host "$i")" link set eth0 up && ip -n "$(cluster_host "$i")" link set lo up || return 1
		mkdir -p "$(cluster_pool "$i")/templates" || return 1
		for t in "$@"; do
			btrfs subvolume snapshot -r "$t" "$(cluster_pool "$i")/templates/$(basename "$t")" >/dev/null || return 1
		done
	done
}

cluster_start() {
	local i=$1
	shift
	nsenter --net="/var/run/netns/$(cluster_host "$i")" "$CLUSTER_NODE_BIN" \
		--listen "$(cluster_ip "$i")" --port 7070 --credential-file "$CLUSTER_WORK/cred" \
		--pool "$(cluster_pool "$i")" --runsc-root "/run/cloche/runsc-$CLUSTER_PREFIX-n$i" \
		--connect-socket "$CLUSTER_WORK/n$i.sock" --node-name "$CLUSTER_PREFIX-n$i" \
		${CLUSTER_PORTAL_URL:+--portal "$CLUSTER_PORTAL_URL"} --heartbeat-ms 500 "$@" \
		>>"$CLUSTER_WORK/n$i.log" 2>&1 &
	CLUSTER_PID[i]=$!
	wait_for 10 curl -sf -m 1 -o /dev/null "$(cluster_url "$i")/healthz" 2>/dev/null
}

cluster_kill() {
	[[ -n ${CLUSTER_PID[$1]:-} ]] || return 0
	kill -9 "${CLUSTER_PID[$1]}" 2>/dev/null
	wait "${CLUSTER_PID[$1]}" 2>/dev/null
	CLUSTER_PID[$1]=
}

cluster_stop() {
	local pid=${CLUSTER_PID[$1]:-}
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null
	wait_for 15 exited "$pid"
	wait "$pid" 2>/dev/null
	CLUSTER_PID[$1]=
}

cluster_api() {
	local out body
	body=$(mktemp -p "$CLUSTER_WORK" body.XXXXXX)
	out=$(curl -s -m 300 -o "$body" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $CLUSTER_CRED" \
		${4:+-H 'Content-Type: application/json' --data-binary "$4"} "$(cluster_url "$1")$3") || out=000
	printf '%s %s\n' "$out" "$(cat "$body" 2>/dev/null)"
	rm -f "$body"
}

# Every sandbox goes through the agent's own teardown: each pool gets one
# more agent run without portal or warm pool, which DELETEs them all.
cluster_down() {
	local i sid t
	for ((i = 1; i <= CLUSTER_N; i++)); do
		cluster_kill "$i"
		if cluster_start "$i" --portal "" >/dev/null 2>&1; then
			for sid in $(cluster_api "$i" GET /v1/sandboxes | cut -d' ' -f2- | jq -r '.sandboxes[].id' 2>/dev/null); do
				cluster_api "$i" DELETE "/v1/sandboxes/$sid" >/dev/null
			done
		fi
		cluster_stop "$i"
		for t in "$(cluster_pool "$i")"/templates/*; do
			[[ -d $t ]] && btrfs subvolume delete "$t" >/dev/null 2>&1
		done
		rm -rf --one-file-system "$(cluster_pool "$i")" "/run/cloche/runsc-$CLUSTER_PREFIX-n$i"
		ip netns del "$(cluster_host "$i")" 2>/dev/null
	done
	[[ -n ${CLUSTER_BR:-} ]] && ip link del "$CLUSTER_BR" 2>/dev/null
	[[ -n ${CLUSTER_WORK:-} ]] && rm -rf "$CLUSTER_WORK"
	CLUSTER_N=0
}

cluster_template_mini() {
	local src=$1 pool=$2 tmp digest
	tmp="$pool/templates/.tmp-mini-$$"
	btrfs subvolume snapshot "$src" "$tmp" >/dev/null || return 1
	jq '.services |= map(select(.name == "mcp-shell"))' "$src/opt/cloche/etc/init.json" \
		>"$tmp/opt/cloche/etc/init.json" || { btrfs subvolume delete "$tmp" >/dev/null; return 1; }
	digest=$(sha256sum "$tmp/opt/cloche/etc/init.json" | head -c 6)$(basename "$src" | cut -d@ -f2 | head -c 6)
	btrfs property set -ts "$tmp" ro true || return 1
	if [[ -d $pool/templates/mini@$digest ]]; then
		btrfs property set -ts "$tmp" ro false; btrfs subvolume delete "$tmp" >/dev/null
	else
		mv "$tmp" "$pool/templates/mini@$digest" || return 1
	fi
	echo "$pool/templates/mini@$digest"
}
