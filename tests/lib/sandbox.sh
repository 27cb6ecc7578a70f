# shellcheck shell=bash
# Sandboxes for the tests and benchmarks, made and destroyed by cloche-node
# (the one implementation of the sandbox lifecycle, docs/node.md).  sb_up
# starts an agent on the pool the first time (or uses the one this shell
# started with tests/lib/node.sh's node_start) and asks it for the sandbox;
# sb_down asks it to destroy; sb_agent_stop ends the agent (call it from the
# EXIT trap after the sb_downs).  The other helpers only reach into a
# sandbox the agent made: its router netns, runsc inside its netns wrapper,
# its health.  Needs tests/lib/tap.sh (free_port).
#
#   CLOCHE_POOL (/var/lib/cloche)  CLOCHE_RUNSC_ROOT (/run/cloche/runsc)
#   CLOCHE_CPUS (2: the whole machine; the agent's default is 1)
. "$(dirname "${BASH_SOURCE[0]}")/node.sh"

CLOCHE_POOL=${CLOCHE_POOL:-/var/lib/cloche}
CLOCHE_RUNSC_ROOT=${CLOCHE_RUNSC_ROOT:-/run/cloche/runsc}
SB_INNER_ADDR=10.0.2.15
# The flags cloche-node gives every runsc command (na_runsc.c).
SB_RUNSC_FLAGS=(--network=sandbox --platform=ptrace --overlay2=none)
sb_agent_mine=

sb_dir() { printf '%s/sandboxes/%s\n' "$CLOCHE_POOL" "$1"; }

# Newest template subvolume of a name, by modification time.
sb_latest_template() {
	# shellcheck disable=SC2012
	ls -1dt "$CLOCHE_POOL/templates/${1:-desktop}"@* 2>/dev/null | head -n 1
}

# sb_agent_ensure: an agent on the pool, started by this shell if none is.
# Waits up to 30 s for the pool's lock: the agent of the test before may
# still be stopping.
sb_agent_ensure() {
	[[ -n $node_pid ]] && kill -0 "$node_pid" 2>/dev/null && return 0
	[[ -n ${NODE_WORK:-} && -d $NODE_WORK ]] || node_setup sbt
	mkdir -p "$CLOCHE_POOL"
	if [[ -e $CLOCHE_POOL/.cloche-node.lock ]]; then
		flock -w 30 "$CLOCHE_POOL/.cloche-node.lock" true ||
			{ echo "sb_agent_ensure: another cloche-node holds $CLOCHE_POOL" >&2; return 1; }
	fi
	node_start || { echo "sb_agent_ensure: cloche-node did not start ($NODE_WORK/node.log)" >&2; return 1; }
	sb_agent_mine=1
}

# sb_agent_stop: stops the agent sb_agent_ensure started (not one the test
# started itself) and removes its work directory.
sb_agent_stop() {
	[[ -n $sb_agent_mine ]] || return 0
	node_stop
	rm -rf "$NODE_WORK"
	NODE_WORK=
	sb_agent_mine=
}

# sb_up ID TEMPLATE_PATH: the agent makes the sandbox from that template
# version and answers when it is ready (or failed; nothing is left then).
sb_up() {
	local id=$1 template=$2 r
	[[ -d $template ]] || { echo "template \`$template\` does not exist" >&2; return 1; }
	sb_agent_ensure || return 1
	r=$(api POST /v1/sandboxes "$(jq -nc --arg id "$id" --arg t "$(basename "$template")" \
		--argjson cpus "${CLOCHE_CPUS:-2}" '{id: $id, template: $t, cpus: $cpus}')")
	[[ $(status_of "$r") == 201 ]] && return 0
	echo "sandbox $id: $(status_of "$r") $(body_of "$r")" >&2
	return 1
}

# sb_down ID: the agent destroys it (TERM, delete, netns, subvolume).
sb_down() {
	local r
	sb_agent_ensure || return 1
	r=$(api DELETE "/v1/sandboxes/$1")
	case $(status_of "$r") in
	200 | 404) return 0 ;;
	*) echo "sandbox $1: $(body_of "$r")" >&2; return 1 ;;
	esac
}

# sb_vnc_secret ID: the secret the agent made for its cloche-vnc.
sb_vnc_secret() { jq -r '.vnc_secret // empty' "$(sb_dir "$1")/meta.json"; }

# Runs runsc for sandbox $1 the way the agent does: inside its netns, with
# /proc/sys/net/core hidden (this runsc takes that file for "root network
# namespace") and without `ip netns exec`, which remounts /sys and hides
# runsc's cgroups.
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

sb_exec() {
	local id=$1
	shift
	sb_runsc "$id" exec "$id" "$@"
}

sb_state() {
	sb_runsc "$1" state "$1" 2>/dev/null | jq -r .status 2>/dev/null || echo absent
}

# sb_ws_code ID QUERY: the status cloche-vnc gives a WebSocket handshake
# with that query ("secret=..." or "view=..."): 101 taken, 403 refused.  The
# probe ends its connection with a reset, as everything outside a sandbox
# does (docs/hibernation.md): a FIN would leave a TIME_WAIT inside, and the
# sandbox's next checkpoint would fail.
sb_ws_code() {
	sb_in_router "$1" python3 -c '
import socket, struct, sys
s = socket.create_connection((sys.argv[1], 6080), timeout=3)
s.sendall(("GET /websockify?%s HTTP/1.1\r\nHost: %s:6080\r\nOrigin: http://%s:6080\r\n"
           "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
           % (sys.argv[2], sys.argv[1], sys.argv[1])).encode())
head = b""
try:
    while b"\r\n" not in head:
        b = s.recv(1024)
        if not b:
            break
        head += b
except OSError:
    pass
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print(head.split(b" ")[1].decode() if head.startswith(b"HTTP/") else "000", end="")
' "$SB_INNER_ADDR" "$2" 2>/dev/null || printf '000'
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
