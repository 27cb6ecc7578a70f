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

# A TCP port nothing listens on right now (for servers the tests start).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}
