# shellcheck shell=bash
# The integration tests' scaffold (and the benchmarks', through bench/lib.sh).
# Each check prints "ok - NAME" or "not ok - NAME" (scripts/test.sh counts
# them); a failure makes tap_exit's status 1.
#
#   ok NAME                   one passing check
#   not_ok NAME [DETAIL]      one failing check; DETAIL (any number of lines)
#                             follows as "#   " comment lines
#   check NAME CMD...         runs CMD: ok or not_ok by its status
#   tap_relay                 a sub-test's output on stdin: its ok / not ok
#                             lines counted here, every other line passed on
#                             (tap_relay <FILE: at the end of a pipe it would
#                             count in a subshell)
#   tap_prefix PREFIX         stdin to stdout, PREFIX put before the name of
#                             each ok / not ok line (not counted here)
#   tap_exit                  "# N check(s) failed" when any did, then exit
#                             0 or 1
#   now_ms                    milliseconds since the epoch
#   wait_for SECONDS CMD...   until CMD succeeds: tried SECONDS * 10 times,
#                             0.1 s apart (a slow CMD stretches the wait, it
#                             never cuts it short); fails if it never did
#   free_ports N              N distinct TCP ports nothing uses, on one line
#   free_port                 one such port
#   listening PORT            something accepts connections on 127.0.0.1:PORT
#   exited PID                process PID is gone (wait_for 5 exited "$pid")
# The functions' own variables start with _tap_: a CMD given to check or
# wait_for that reads a caller's variable sees the caller's.
TAP_FAILED=0 # 1 once a check failed: tap_exit's status
TAP_FAILS=0  # how many failed

ok() { echo "ok - $*"; }

not_ok() {
	echo "not ok - $1"
	[[ $# -lt 2 ]] || printf '#   %s\n' "${2//$'\n'/$'\n'#   }"
	TAP_FAILED=1
	TAP_FAILS=$((TAP_FAILS + 1))
}

check() {
	local _tap_name=$1
	shift
	if "$@"; then ok "$_tap_name"; else not_ok "$_tap_name"; fi
}

tap_relay() {
	local _tap_line
	while IFS= read -r _tap_line || [[ -n $_tap_line ]]; do
		case $_tap_line in
		"ok - "*) ok "${_tap_line#ok - }" ;;
		"not ok - "*) not_ok "${_tap_line#not ok - }" ;;
		*) printf '%s\n' "$_tap_line" ;;
		esac
	done
}

tap_prefix() {
	local _tap_line
	while IFS= read -r _tap_line || [[ -n $_tap_line ]]; do
		case $_tap_line in
		"ok - "* | "not ok - "*) printf '%s - %s%s\n' "${_tap_line%% - *}" "$1" "${_tap_line#* - }" ;;
		*) printf '%s\n' "$_tap_line" ;;
		esac
	done
}

tap_exit() {
	[[ $TAP_FAILS == 0 ]] || echo "# $TAP_FAILS check(s) failed"
	exit "$TAP_FAILED"
}

now_ms() { date +%s%3N; }

wait_for() {
	local _tap_n=$(($1 * 10))
	shift
	while ((_tap_n-- > 0)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# The ports are drawn below the kernel's ephemeral range: one drawn inside
# it can be taken by an outgoing connection between this check and the
# server's bind (seen: a proxy test after 1000 WebSockets).  Never 10080,
# which Chromium refuses to connect to (ERR_UNSAFE_PORT).
free_ports() {
	local _tap_want=$1 _tap_lo _tap_p _tap_got=()
	_tap_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[[ ${_tap_lo:-0} -gt 12000 ]] || _tap_lo=32768
	while [[ ${#_tap_got[@]} -lt $_tap_want ]]; do
		_tap_p=$((10000 + RANDOM % (_tap_lo - 10000)))
		[[ $_tap_p != 10080 && " ${_tap_got[*]} " != *" $_tap_p "* ]] || continue
		[[ -n $(ss -Htan "sport = :$_tap_p") ]] || _tap_got+=("$_tap_p")
	done
	echo "${_tap_got[*]}"
}

free_port() { free_ports 1; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

exited() { ! kill -0 "$1" 2>/dev/null; }
