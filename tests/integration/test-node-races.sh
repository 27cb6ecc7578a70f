#!/usr/bin/env bash
# sanitize: yes
# cloche-node where requests meet: each part forces the situation a race
# or a leftover needs, on real runsc, btrfs and netns.
#  1. An egress change that takes long (a proxy connection of the sandbox
#     sits in name resolution against a DNS server that never answers, and
#     closing the proxy waits for it): the API keeps answering meanwhile, a
#     DELETE of that sandbox gets 409 instead of racing the change, and once
#     the change is done the DELETE leaves nothing.
#  2. A sandbox whose runsc container is `stopped` (its sentry killed, as
#     after a refused checkpoint) is destroyed by cloche-node and by
#     scripts/sandbox down (under set -e) with nothing left.
#  3. Two imports of one template stream at once: one 201, one 409, and the
#     template stays; a stream with a second subvolume (appended, or `btrfs
#     send A B`) is refused and leaves nothing.
#  4. SIGTERM while port-connect requests are in flight: a clean exit (under
#     ASan: no use after free, no leak).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. scripts/lib/sandbox.sh
. tests/lib/node.sh
. tests/lib/inet.sh

pre="t-nr-$$"
node_setup "$pre"
work=$NODE_WORK
resolv_backup=/etc/resolv.conf.cloche-test-$$
scratch="$CLOCHE_POOL/.t-race-$$"
imported=()
holders=()

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p t
	restore_dns
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	for t in "${imported[@]}"; do
		[[ -e $CLOCHE_POOL/templates/$t ]] && btrfs -q subvolume delete "$CLOCHE_POOL/templates/$t" >/dev/null 2>&1
	done
	if [[ -d $scratch ]]; then
		for t in "$scratch"/*@*; do [[ -e $t ]] && btrfs -q subvolume delete "$t" >/dev/null 2>&1; done
		rm -rf "$scratch"
	fi
	inet_down
	node_cleanup
}
trap cleanup EXIT
node_preflight

# A DNS server that never answers, at 192.0.2.53 in a netns of the test's own;
# the host's resolver points at it for the few seconds of part 1 only (glibc
# rereads resolv.conf when it changes); names in /etc/hosts are not affected.
restore_dns() { [[ -f $resolv_backup ]] && cat "$resolv_backup" >/etc/resolv.conf && rm -f "$resolv_backup"; }
inet_up 192.0.2 "$work"
ip -n "$INET_NS" addr add 192.0.2.53/24 dev eth0
ip netns exec "$INET_NS" socat -u UDP-RECV:53,bind=192.0.2.53 /dev/null &
INET_PIDS+=($!)
cp /etc/resolv.conf "$resolv_backup"
printf 'nameserver 192.0.2.53\noptions timeout:6 attempts:1\n' >/etc/resolv.conf
slow_dns() {
	local t0=$SECONDS
	! getent hosts "slow-$$.cloche-dns.test" >/dev/null && ((SECONDS - t0 >= 3))
}
check "a name outside /etc/hosts now takes seconds to fail (the silent DNS)" slow_dns

check "cloche-node starts" node_start

# --- 1. egress change vs DELETE, and the API during a slow change -----------
A="$pre-a"
r=$(api POST /v1/sandboxes "{\"id\":\"$A\",\"egress\":{\"allow\":[\"slow-$$.cloche-dns.test:80\"]}}")
check "sandbox A with an allowlist is ready" test "$(status_of "$r")" = 201
# A connection through A's proxy to a name the silent DNS holds up.
sb_in_router "$A" curl -s -m 30 -o /dev/null -x http://10.0.2.2:3128 "http://slow-$$.cloche-dns.test/" &
holders+=($!)
sleep 0.7
t0=$(now_ms)
api PUT "/v1/sandboxes/$A/egress" '"none"' >"$work/put" &
put_pid=$!
sleep 0.3
t1=$(now_ms)
r=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$NODE_BASE/healthz")
ms=$(($(now_ms) - t1))
check "the API answers while the egress change waits ($r in $ms ms)" test "$r" = 200 -a "$ms" -lt 1000
r=$(api DELETE "/v1/sandboxes/$A")
check "a DELETE during the change gets 409 ($(body_of "$r" | jq -r .error.message 2>/dev/null))" \
	test "$(status_of "$r")" = 409
r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
check "creating the same id meanwhile gets 409" test "$(status_of "$r")" = 409
wait "$put_pid"
put_ms=$(($(now_ms) - t0))
restore_dns
check "the change ends 200 with egress none (after $put_ms ms)" \
	bash -c '[[ $(cut -d" " -f1 <"$1") == 200 && $(cut -d" " -f2- <"$1" | jq -r .egress) == none ]]' _ "$work/put"
check "... and it really waited for the connection in name resolution (>= 2 s)" test "$put_ms" -ge 2000
r=$(api DELETE "/v1/sandboxes/$A")
check "DELETE after the change answers 200" test "$(status_of "$r")" = 200
check "nothing of A is left" gone "$A"
ls_listen() { ss -Hltn 2>/dev/null | grep -c ':3128 ' || true; }
check "no egress listener is left on the host" test "$(ls_listen)" = 0

# --- 2. a stopped container -----------------------------------------------
B="$pre-b"
r=$(api POST /v1/sandboxes "{\"id\":\"$B\"}")
check "sandbox B is ready" test "$(status_of "$r")" = 201
kill -9 "$(sb_runsc "$B" state "$B" 2>/dev/null | jq -r .pid)" 2>/dev/null
for ((i = 0; i < 50; i++)); do [[ $(sb_state "$B") == stopped ]] && break; sleep 0.2; done
check "B's container is stopped (its sentry was killed)" test "$(sb_state "$B")" = stopped
r=$(api DELETE "/v1/sandboxes/$B")
check "cloche-node destroys the stopped sandbox (DELETE 200)" test "$(status_of "$r")" = 200
check "nothing of B is left" gone "$B"

C="$pre-c"
sb_up "$C" "$(sb_latest_template desktop)" && sb_wait_ready "$C" 120
kill -9 "$(sb_runsc "$C" state "$C" 2>/dev/null | jq -r .pid)" 2>/dev/null
for ((i = 0; i < 50; i++)); do [[ $(sb_state "$C") == stopped ]] && break; sleep 0.2; done
check "a sandbox.sh sandbox's container is stopped too" test "$(sb_state "$C")" = stopped
check "scripts/sandbox down removes it under set -e (exit 0)" scripts/sandbox down "$C"
check "nothing of it is left" gone "$C"

# --- 3. template imports --------------------------------------------------
# A small template (20 MB, so that two receives overlap) and a second one.
btrfs_tpl() { # NAME: a read-only subvolume in the scratch directory
	btrfs -q subvolume create "$scratch/$1" >/dev/null &&
		head -c 20M /dev/urandom >"$scratch/$1/data" && echo "$1" >"$scratch/$1/name" &&
		btrfs property set -ts "$scratch/$1" ro true
}
mkdir -p "$scratch"
t1="race$$@0123456789ab"
t2="extra$$@ba9876543210"
imported=("$t1" "$t2")
btrfs_tpl "$t1" && btrfs_tpl "$t2" &&
	btrfs -q send -f "$work/one.stream" "$scratch/$t1" 2>/dev/null &&
	btrfs -q send -f "$work/two.stream" "$scratch/$t2" 2>/dev/null
check "two template streams are made" test -s "$work/one.stream" -a -s "$work/two.stream"
api POST /v1/templates "{\"import\":\"$work/one.stream\"}" >"$work/imp1" &
p1=$!
api POST /v1/templates "{\"import\":\"$work/one.stream\"}" >"$work/imp2" &
p2=$!
wait "$p1" "$p2"
codes=$(printf '%s\n%s\n' "$(cut -d' ' -f1 <"$work/imp1")" "$(cut -d' ' -f1 <"$work/imp2")" | sort | tr '\n' ' ')
check "two imports of one stream at once: one 201, one 409 ($codes)" test "$codes" = "201 409 "
check "the imported template is there, read-only" \
	test "$(btrfs property get -ts "$CLOCHE_POOL/templates/$t1" ro 2>/dev/null)" = ro=true
check "... with all of its data" cmp -s "$scratch/$t1/data" "$CLOCHE_POOL/templates/$t1/data"
btrfs -q subvolume delete "$CLOCHE_POOL/templates/$t1" >/dev/null
cat "$work/one.stream" "$work/two.stream" >"$work/both.stream"
r=$(api POST /v1/templates "{\"import\":\"$work/both.stream\"}")
check "a stream with a second stream appended is refused (400)" test "$(status_of "$r")" = 400
btrfs -q send -f "$work/pair.stream" "$scratch/$t1" "$scratch/$t2" 2>/dev/null
r=$(api POST /v1/templates "{\"import\":\"$work/pair.stream\"}")
check "a stream of two subvolumes (btrfs send A B) is refused (400)" test "$(status_of "$r")" = 400
check "templates/ holds neither" \
	test "$(find "$CLOCHE_POOL/templates" -maxdepth 1 \( -name "race$$@*" -o -name "extra$$@*" \) | wc -l)" = 0

# --- 4. SIGTERM with port-connect requests in flight ----------------------
for ((i = 0; i < 6; i++)); do
	sleep 8 | socat - "UNIX-CONNECT:$work/node.sock" >/dev/null 2>&1 &
	holders+=($!)
done
sleep 0.5
t0=$(now_ms)
node_stop
rc=$?
check "SIGTERM with 6 port-connect requests in flight: exit 0 ($rc, $(($(now_ms) - t0)) ms)" test "$rc" = 0
check "... after waiting for them (a clean stop, not an exit with work left)" \
	bash -c 'grep -q "\"msg\":\"stopped\"" "$1" && ! grep -q "work in progress" "$1"' _ "$work/node.log"
check "no sanitizer report in the agent's log" \
	bash -c '! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$1"' _ "$work/node.log"
check "every line the agent logged is JSON" node_log_is_json
tap_exit
