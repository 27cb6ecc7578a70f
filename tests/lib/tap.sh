# shellcheck shell=bash
# Tiny helpers for the integration tests: each check prints "ok - name" or
# "not ok - name" (scripts/test.sh counts them) and failures make the
# script exit non-zero at the end.
TAP_FAILED=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; TAP_FAILED=1; }

# check NAME CMD...: runs CMD, reports by its status.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

tap_exit() { exit "$TAP_FAILED"; }

# Milliseconds since the epoch.
now_ms() { date +%s%3N; }

# wait_for SECONDS CMD...: until CMD succeeds (tried every 0.1 s).
wait_for() {
	local n=$(($1 * 10))
	shift
	while ((n-- > 0)); do "$@" && return 0; sleep 0.1; done
	return 1
}

# A TCP port no socket uses right now (for servers the tests start), below
# the kernel's ephemeral range: a port drawn inside it can be taken by an
# outgoing connection between this check and the server's bind (seen: a
# proxy test after 1000 WebSockets).
free_port() {
	local p lo
	lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	((lo > 12000)) || lo=32768
	while :; do
		p=$((10000 + RANDOM % (lo - 10000)))
		ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}
