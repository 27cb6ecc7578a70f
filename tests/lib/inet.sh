# shellcheck shell=bash
# A small "internet" for tests that need a server outside the node: a netns
# of its own behind a veth whose host end is an address of this node, with
# names in /etc/hosts and tiny HTTP servers (socat + a responder script).
# Nothing leaves the machine.  Call inet_down from the EXIT trap.
#
#   inet_up NET WORK         NET is a /24 prefix such as 198.51.100 (give each
#                            test its own: tests may run side by side); the
#                            host end is NET.1, the internet NET.10
#   inet_host NAME... ADDR   names for ADDR in /etc/hosts (removed by inet_down)
#   inet_serve [NETNS] ADDR PORT TEXT   an HTTP server answering TEXT
#   inet_down

INET_NS=
INET_VETH=
INET_TAG=
INET_WORK=
INET_PIDS=()

inet_up() {
	local net=$1
	INET_WORK=$2
	INET_NS="inet-$$"
	INET_VETH="vinet$$"
	INET_TAG="# cloche-test-$$"
	cat >"$INET_WORK/respond.sh" <<'SH'
#!/bin/bash
while IFS= read -r line; do line=${line%$'\r'}; [[ -z $line ]] && break; done
body="<html><head><title>$1</title></head><body><p>$1</p></body></html>"
printf 'HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "${#body}" "$body"
SH
	chmod +x "$INET_WORK/respond.sh"
	ip netns add "$INET_NS" &&
		ip link add "$INET_VETH" type veth peer name eth0 netns "$INET_NS" &&
		ip addr add "$net.1/24" dev "$INET_VETH" &&
		ip link set "$INET_VETH" up &&
		ip -n "$INET_NS" addr add "$net.10/24" dev eth0 &&
		ip -n "$INET_NS" link set eth0 up &&
		ip -n "$INET_NS" link set lo up &&
		ip -n "$INET_NS" route add default via "$net.1"
}

inet_host() {
	local addr=${*: -1} names=("${@:1:$#-1}")
	printf '%s %s %s\n' "$addr" "${names[*]}" "$INET_TAG" >>/etc/hosts
}

inet_serve() {
	local ns=
	if [[ $# == 4 ]]; then ns=$1; shift; fi
	${ns:+ip netns exec "$ns"} socat "TCP-LISTEN:$2,bind=$1,fork,reuseaddr" \
		EXEC:"$INET_WORK/respond.sh $3" 2>/dev/null &
	INET_PIDS+=($!)
}

inet_down() {
	local p
	for p in "${INET_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	INET_PIDS=()
	[[ -n $INET_TAG ]] && sed -i "\|$INET_TAG\$|d" /etc/hosts
	[[ -n $INET_NS ]] && ip netns del "$INET_NS" 2>/dev/null
	[[ -n $INET_VETH ]] && ip link del "$INET_VETH" 2>/dev/null
	return 0
}
