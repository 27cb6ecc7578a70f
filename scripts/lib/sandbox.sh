# shellcheck shell=bash
# A node-local sandbox without the node agent: netns pair, btrfs snapshot of
# a template, OCI bundle and runsc, following the recipe in docs/sandbox.md.
# Sourced by scripts/sandbox, the tests and the benchmarks.  cloche-node
# takes this over; until then this file is the one place that builds runsc
# command lines and netns pairs.  Safe to use under `set -e`.
#
# Layout per sandbox:  $CLOCHE_POOL/sandboxes/<id>/{rootfs,bundle/config.json,meta.json,console.log}
# Network namespaces:  S-<id> (sandbox; gVisor owns eth0 10.0.2.15/24)
#                      R-<id> (router; veth0 10.0.2.2/24)

CLOCHE_POOL=${CLOCHE_POOL:-/var/lib/cloche}
CLOCHE_RUNSC_ROOT=${CLOCHE_RUNSC_ROOT:-/run/cloche/runsc}
SB_INNER_ADDR=10.0.2.15
SB_ROUTER_ADDR=10.0.2.2

# The flags every runsc command carries (the same as cloche-node's, see
# docs/sandbox.md): ptrace platform, no rootfs overlay (writes land in the
# btrfs subvolume).
SB_RUNSC_FLAGS=(--network=sandbox --platform=ptrace --overlay2=none)

sb_dir() { printf '%s/sandboxes/%s\n' "$CLOCHE_POOL" "$1"; }

sb_valid_id() {
	[[ $1 =~ ^[a-z0-9][a-z0-9-]{0,30}$ ]] || { echo "sandbox id \`$1\`: use 1-31 of a-z, 0-9 and -" >&2; return 1; }
}

# Runs runsc for sandbox $1 the only way that works for a networked
# sandbox on this kernel: inside its netns, with /proc/sys/net/core hidden
# (this runsc treats that file as "root network namespace") and without
# `ip netns exec`, which remounts /sys and hides runsc's cgroups.
sb_runsc() {
	local id=$1
	shift
	nsenter --net="/var/run/netns/S-$id" unshare -m sh -c \
		'mount -t tmpfs none /proc/sys/net/core && exec runsc "$@"' runsc \
		--root "$CLOCHE_RUNSC_ROOT" "${SB_RUNSC_FLAGS[@]}" "$@"
}

# Runs a command inside the router netns of $1 (how host code reaches the
# sandbox: connect to 10.0.2.15:<port> from there).
sb_in_router() {
	local id=$1
	shift
	nsenter --net="/var/run/netns/R-$id" "$@"
}

sb_net_up() {
	local id=$1 s="S-$1" r="R-$1"
	ip netns add "$s" && ip netns add "$r" &&
		ip link add veth0 netns "$r" type veth peer name eth0 netns "$s" &&
		ip -n "$r" addr add "$SB_ROUTER_ADDR/24" dev veth0 &&
		ip -n "$r" link set veth0 up && ip -n "$r" link set lo up &&
		ip -n "$s" addr add "$SB_INNER_ADDR/24" dev eth0 &&
		ip -n "$s" link set eth0 up && ip -n "$s" link set lo up &&
		ip -n "$s" route add default via "$SB_ROUTER_ADDR"
}

sb_net_down() {
	ip netns del "S-$1" 2>/dev/null
	ip netns del "R-$1" 2>/dev/null
	return 0
}

# Writes the OCI bundle for sandbox $1 on rootfs $2 into $3, with the
# limits cloche-node gives by default (docs/node.md, Limits):
# CLOCHE_MEMORY_MB (2048) plus gVisor's reserve, CLOCHE_PIDS (1024) guest
# processes and 8 x that + 1024 host tasks.
sb_bundle() {
	local id=$1 rootfs=$2 bundle=$3 width=${CLOCHE_SCREEN_WIDTH:-1280} height=${CLOCHE_SCREEN_HEIGHT:-800}
	local secret
	secret=$(sb_vnc_secret "$id") || return 1
	local mem=${CLOCHE_MEMORY_MB:-2048} pids=${CLOCHE_PIDS:-1024} reserve
	reserve=$((192 + mem / 8))
	mkdir -p "$bundle"
	(cd "$bundle" && rm -f config.json && runsc spec) || return 1
	local caps='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FOWNER","CAP_SETUID","CAP_SETGID","CAP_KILL","CAP_NET_BIND_SERVICE","CAP_AUDIT_WRITE"]'
	jq --arg root "$rootfs" --arg ns "/var/run/netns/S-$id" --arg id "$id" --arg secret "$secret" \
		--arg w "$width" --arg h "$height" --argjson caps "$caps" \
		--argjson mem "$mem" --argjson reserve "$reserve" --argjson pids "$pids" '
		.root = {path: $root, readonly: false}
		| .hostname = "sandbox"
		| .process.terminal = false
		| .process.args = ["/opt/cloche/bin/cloche-init"]
		| .process.cwd = "/"
		| .process.env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"CLOCHE_SANDBOX_ID=" + $id, "CLOCHE_MEMORY_RESERVE_MB=" + ($reserve | tostring),
			"CLOCHE_VNC_SECRET=" + $secret,
			"SCREEN_WIDTH=" + $w, "SCREEN_HEIGHT=" + $h]
		| .process.rlimits = [{type: "RLIMIT_NOFILE", hard: 1024, soft: 1024},
			{type: "RLIMIT_NPROC", hard: $pids, soft: $pids}]
		| .linux.resources = (.linux.resources // {}) + {memory: {limit: (($mem + $reserve) * 1048576)},
			pids: {limit: (8 * $pids + 1024)}}
		| .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
		| .mounts += [
			{destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]},
			{destination: "/run", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=755"]},
			{destination: "/dev/shm", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]}]
		| .linux.namespaces = [(.linux.namespaces[] | select(.type != "network")),
			{type: "network", path: $ns}]
		' "$bundle/config.json" >"$bundle/config.json.new" && mv "$bundle/config.json.new" "$bundle/config.json"
}

# sb_vnc_secret ID: prints the sandbox's VNC secret (docs/vnc.md), making
# it on first use: 18 random bytes in base64url, kept 0600 in the sandbox's
# directory.  noVNC opens with http://<6080>/?secret=<it>; VNC clients use
# it as the password (its first 8 characters).
sb_vnc_secret() {
	local f
	f="$(sb_dir "$1")/vnc-secret"
	if [[ ! -s $f ]]; then
		(umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' '-_' >"$f") || return 1
	fi
	cat "$f"
}

# Newest template subvolume of a name, by modification time.
sb_latest_template() {
	local name=${1:-desktop}
	# shellcheck disable=SC2012
	ls -1dt "$CLOCHE_POOL/templates/$name"@* 2>/dev/null | head -n 1
}

# sb_up ID TEMPLATE_PATH: creates and starts a sandbox; nothing is left
# behind when a step fails.
sb_up() {
	local id=$1 template=$2 dir
	sb_valid_id "$id" || return 1
	dir=$(sb_dir "$id")
	[[ -d $template ]] || { echo "template \`$template\` does not exist" >&2; return 1; }
	[[ ! -e $dir ]] || { echo "sandbox $id already exists" >&2; return 1; }
	mkdir -p "$dir" "$CLOCHE_RUNSC_ROOT" || return 1
	if ! { btrfs -q subvolume snapshot "$template" "$dir/rootfs" >/dev/null &&
		sb_net_up "$id" &&
		sb_bundle "$id" "$dir/rootfs" "$dir/bundle" &&
		jq -n --arg id "$id" --arg t "$template" --arg at "$(date -u +%FT%TZ)" \
			'{id: $id, template: $t, created_at: $at, inner_addr: "10.0.2.15"}' >"$dir/meta.json" &&
		(cd "$dir/bundle" && sb_runsc "$id" run -detach --bundle "$dir/bundle" "$id" \
			>>"$dir/console.log" 2>&1 </dev/null); }; then
		echo "sandbox $id: start failed; see $dir/console.log" >&2
		tail -n 5 "$dir/console.log" >&2 2>/dev/null
		sb_down "$id"
		return 1
	fi
}

# Health JSON of a sandbox ("" when it does not answer).
sb_health() {
	sb_in_router "$1" curl -s -m 2 "http://$SB_INNER_ADDR:8080/health" 2>/dev/null || true
}

# sb_health_code ID: the HTTP status of its health endpoint (000 when
# nothing answered).
sb_health_code() {
	sb_in_router "$1" curl -s -o /dev/null -w '%{http_code}' -m 3 "http://$SB_INNER_ADDR:8080/health" 2>/dev/null ||
		true
}

# sb_wait_ready ID SECONDS: waits until health answers 200.
sb_wait_ready() {
	local id=$1 deadline=$((SECONDS + ${2:-120}))
	while ((SECONDS < deadline)); do
		[[ $(sb_health_code "$id") == 200 ]] && return 0
		sleep 0.2
	done
	echo "sandbox $id: not ready after ${2:-120}s: $(sb_health "$id")" >&2
	return 1
}

sb_exec() {
	local id=$1
	shift
	sb_runsc "$id" exec "$id" "$@"
}

sb_state() {
	sb_runsc "$1" state "$1" 2>/dev/null | jq -r .status 2>/dev/null || echo absent
}

# sb_down ID: stops (SIGTERM, so init stops services cleanly), deletes the
# container, the netns pair and the rootfs.  Idempotent.
# Every step tolerates what a broken sandbox does: a container that is
# `stopped` (its sentry died, as after a refused checkpoint) refuses `kill`,
# and that must not end the teardown under `set -e`.
sb_down() {
	local id=$1 dir i
	dir=$(sb_dir "$id")
	if [[ -e /var/run/netns/S-$id ]] && sb_runsc "$id" state "$id" >/dev/null 2>&1; then
		if [[ $(sb_state "$id") == running ]]; then
			sb_runsc "$id" kill "$id" TERM >/dev/null 2>&1 || true
			for ((i = 0; i < 80; i++)); do
				[[ $(sb_state "$id") == running ]] || break
				sleep 0.1
			done
		fi
		sb_runsc "$id" delete -force "$id" >/dev/null 2>&1 || true
	fi
	# A container left from a crash without its netns: delete it directly.
	if runsc --root "$CLOCHE_RUNSC_ROOT" state "$id" >/dev/null 2>&1; then
		runsc --root "$CLOCHE_RUNSC_ROOT" delete -force "$id" >/dev/null 2>&1 || true
	fi
	if runsc --root "$CLOCHE_RUNSC_ROOT" state "$id" >/dev/null 2>&1; then
		echo "sandbox $id: runsc cannot delete its container" >&2
		return 1
	fi
	sb_net_down "$id"
	if [[ -d $dir/rootfs ]]; then
		btrfs -q subvolume delete "$dir/rootfs" >/dev/null 2>&1 || { echo "sandbox $id: cannot delete rootfs" >&2; return 1; }
	fi
	rm -rf "$dir"
}

sb_list() {
	local d
	for d in "$CLOCHE_POOL"/sandboxes/*/; do
		[[ -f $d/meta.json ]] && basename "$d"
	done
	return 0
}
