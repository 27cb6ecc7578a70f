#!/usr/bin/env bash
# sanitize: yes
# cloche-node where requests meet: each part forces the situation a race or
# a leftover needs, on real runsc, btrfs and netns.  The race windows are
# widened with the agent's test hooks (--test-hooks, node-agent/na_test.h:
# pauses at named points, off unless that option is given), so each part
# fails the same way every time on code that has the race.
#  1. A DELETE whose worker looks at the sandbox while an egress change of it
#     runs: the DELETE gets 409 (the change holds the sandbox busy), the
#     change completes, and a later sandbox with the same id gets a proxy of
#     its own (before: the change opened a listener after the teardown had
#     closed the proxy, left it pinned to the deleted netns, and the next
#     sandbox of that id got none while the API showed its allowlist).
#  2. Revoking egress while a proxy connection sits in name resolution: the
#     API keeps answering (the change waits on a worker, not on the loop),
#     a DELETE meanwhile gets 409, and the change ends 200.  Then SIGTERM
#     while another change runs: the agent lets it finish, exits 0, and
#     frees the answer it could no longer send (ASan: no leak).
#  3. A sandbox whose runsc container is `stopped` (its sentry killed, as
#     after a refused checkpoint) is destroyed by cloche-node with nothing
#     left: no directory, netns, runsc state, subvolume, cgroup or mount.
#  4. Template imports: two of one stream at once give one 201 and one 409
#     and the template stays whole; a stream that carries a second
#     subvolume, appended after its end or slipped in before it, is refused
#     with 400 and leaves nothing.
#  5. SIGTERM while a port-connect request is being served: the agent waits
#     for it (the client gets its answer), then frees the node and exits 0;
#     under ASan a request thread that outlived the node would be reported.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh

pre="${CLOCHE_TEST_PREFIX:-t}-nr-$$"
node_setup "$pre"
work=$NODE_WORK
scratch="$CLOCHE_POOL/.t-race-$$"
imported=()
holders=()

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p t
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null; done
	for t in "${imported[@]}"; do
		[[ -e $CLOCHE_POOL/templates/$t ]] && btrfs -q subvolume delete "$CLOCHE_POOL/templates/$t" >/dev/null 2>&1
	done
	if [[ -d $scratch ]]; then
		for t in "$scratch"/*@*; do [[ -e $t ]] && btrfs -q subvolume delete "$t" >/dev/null 2>&1; done
		rm -rf "$scratch"
	fi
	node_cleanup
}
trap cleanup EXIT
node_preflight

# hook_seen POINT: how often the agent has logged that it paused at POINT.
hook_seen() {
	grep '"msg":"test hook"' "$work/node.log" 2>/dev/null | grep -c "\"point\":\"$1\""
}
# wait_hook POINT N: until it paused there more than N times (10 s at most).
wait_hook() {
	local i
	for ((i = 0; i < 100; i++)); do
		(($(hook_seen "$1") > $2)) && return 0
		sleep 0.1
	done
	echo "# the agent never paused at $1" >&2
	return 1
}
# proxy_listens ID: something accepts at 10.0.2.2:3128 in ID's router netns.
proxy_listens() {
	sb_in_router "$1" timeout 3 bash -c 'exec 3<>/dev/tcp/10.0.2.2/3128' 2>/dev/null
}
# proxy_refuses ID: ID's proxy answers a name outside its allowlist with 403.
proxy_refuses() {
	[[ $(sb_in_router "$1" curl -s -m 10 -o /dev/null -w '%{http_code}' -x http://10.0.2.2:3128 \
		http://not-allowed.cloche.test/ 2>/dev/null) == 403 ]]
}
proxy_closed() { ! proxy_listens "$1"; }
# destroyed STATUS ID: a DELETE answered 200 and nothing of ID is left.
destroyed() { [[ $1 == 200 ]] && gone "$2"; }
no_sanitizer_report() {
	! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$work/node.log"
}

# --- 1. an egress change meets a DELETE ------------------------------------
# The DELETE's worker pauses before it looks at A; the change is accepted in
# that pause and pauses itself before it applies; the DELETE's worker wakes
# first, and (on code with the race) tears A down while the change opens A's
# listener; the teardown pauses after closing A's proxy, so that listener
# surely arrives before A's netns is gone.
hooks="destroy=1500,teardown=3000,egress-apply=1500"
check "cloche-node starts with race hooks ($hooks)" node_start --test-hooks "$hooks"
check "it says that its test hooks are on" grep -q '"test hooks are on' "$work/node.log"
A="$pre-a"
r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
check "sandbox A (egress none) is ready" test "$(status_of "$r")" = 201
n0=$(hook_seen destroy)
api DELETE "/v1/sandboxes/$A" >"$work/del1" &
del_pid=$!
wait_hook destroy "$n0"
api PUT "/v1/sandboxes/$A/egress" '{"allow":["192.0.2.1:80"]}' >"$work/put1" &
put_pid=$!
wait "$del_pid" "$put_pid"
echo "# DELETE: $(cat "$work/del1")"
echo "# PUT: $(cut -c1-200 "$work/put1")"
check "a DELETE that meets an egress change gets 409" \
	test "$(cut -d' ' -f1 "$work/del1")" = 409
check "the change ends 200 with the allowlist" \
	test "$(cut -d' ' -f1 "$work/put1")" = 200 -a \
	"$(cut -d' ' -f2- "$work/put1" | jq -r '.egress.allow[0]' 2>/dev/null)" = 192.0.2.1:80
check "A's proxy listens in A's router netns" proxy_listens "$A"
r=$(api DELETE "/v1/sandboxes/$A")
check "DELETE after the change answers 200" test "$(status_of "$r")" = 200
check "nothing of A is left" gone "$A"
r=$(api POST /v1/sandboxes "{\"id\":\"$A\",\"egress\":{\"allow\":[\"192.0.2.1:80\"]}}")
check "a new sandbox with the same id and an allowlist is ready" test "$(status_of "$r")" = 201
check "... and it gets a proxy of its own (none was left pinned to the old netns)" proxy_listens "$A"
check "... which answers for it (403 for a name outside its allowlist)" proxy_refuses "$A"
r=$(api DELETE "/v1/sandboxes/$A")
check "that one is destroyed too (200), nothing left" destroyed "$(status_of "$r")" "$A"
node_stop

# --- 2. revoking egress while a connection is in name resolution ---------
hooks="egress-resolve=6000,egress-apply=2000"
check "cloche-node restarts with $hooks" node_start --test-hooks "$hooks"
B="$pre-b"
r=$(api POST /v1/sandboxes "{\"id\":\"$B\",\"egress\":{\"allow\":[\"192.0.2.1:80\"]}}")
check "sandbox B with an allowlist is ready" test "$(status_of "$r")" = 201
n0=$(hook_seen egress-resolve)
sb_in_router "$B" curl -s -m 30 -o /dev/null -x http://10.0.2.2:3128 http://192.0.2.1/ &
holders+=($!)
check "a connection through B's proxy is in its name lookup" wait_hook egress-resolve "$n0"
t0=$(now_ms)
api PUT "/v1/sandboxes/$B/egress" '"none"' >"$work/put2" &
put_pid=$!
sleep 0.3
t1=$(now_ms)
r=$(curl -s -m 15 -o /dev/null -w '%{http_code}' "$NODE_BASE/healthz")
ms=$(($(now_ms) - t1))
check "the API answers while the revocation waits for that connection ($r in $ms ms)" \
	test "$r" = 200 -a "$ms" -lt 1000
r=$(api DELETE "/v1/sandboxes/$B")
check "a DELETE during the change gets 409 ($(body_of "$r" | jq -r .error.message 2>/dev/null))" \
	test "$(status_of "$r")" = 409
wait "$put_pid"
put_ms=$(($(now_ms) - t0))
check "the revocation ends 200 with egress none (after $put_ms ms)" \
	bash -c '[[ $(cut -d" " -f1 <"$1") == 200 && $(cut -d" " -f2- <"$1" | jq -r .egress) == none ]]' _ "$work/put2"
check "... having waited for the connection (>= 3 s)" test "$put_ms" -ge 3000
check "B's proxy is closed" proxy_closed "$B"
# SIGTERM while a change runs that ends within the agent's grace period:
# its answer is posted to a loop that has stopped; the agent must free it.
n0=$(hook_seen egress-apply)
api PUT "/v1/sandboxes/$B/egress" '{"allow":["192.0.2.1:80"]}' >/dev/null &
holders+=($!)
wait_hook egress-apply "$n0"
node_stop
rc=$?
check "SIGTERM during an egress change: exit 0 once it is done ($rc)" test "$rc" = 0
check "... with no sanitizer report (its unsent answer was freed)" no_sanitizer_report
check "... and the change was made (meta.json has the allowlist)" \
	quiet jq -e '.egress.allow[0] == "192.0.2.1:80"' "$CLOCHE_POOL/sandboxes/$B/meta.json"

# --- 3. a stopped container ------------------------------------------------
check "cloche-node restarts without hooks" node_start
check "it re-adopts B with its allowlist: B's proxy listens again" proxy_listens "$B"
r=$(api DELETE "/v1/sandboxes/$B")
check "DELETE of B answers 200, nothing of B left" destroyed "$(status_of "$r")" "$B"
# stop_sentry ID: kills the sandbox's runsc sandbox process (the sentry) from
# the host and waits until runsc calls the container stopped.
stop_sentry() {
	local i
	kill -9 "$(sb_runsc "$1" state "$1" 2>/dev/null | jq -r .pid)" 2>/dev/null
	for ((i = 0; i < 50; i++)); do [[ $(sb_state "$1") == stopped ]] && return 0; sleep 0.2; done
	return 1
}
C="$pre-c"
r=$(api POST /v1/sandboxes "{\"id\":\"$C\"}")
check "sandbox C is ready" test "$(status_of "$r")" = 201
check "C's container is stopped once its sentry is killed" stop_sentry "$C"
r=$(api DELETE "/v1/sandboxes/$C")
check "cloche-node destroys the stopped sandbox (DELETE 200)" test "$(status_of "$r")" = 200
check "nothing of C is left (dir, netns, runsc state, subvolume, cgroup, mount)" gone "$C"

# --- 4. template imports -----------------------------------------------------
# Small templates (20 MB, so that two receives overlap).
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
	btrfs -q send -f "$work/two.stream" "$scratch/$t2" 2>/dev/null &&
	btrfs -q send -f "$work/both.stream" "$scratch/$t1" "$scratch/$t2" 2>/dev/null
check "template streams are made" test -s "$work/one.stream" -a -s "$work/two.stream" -a -s "$work/both.stream"
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
none_left() {
	[[ ! -e $CLOCHE_POOL/templates/$t1 && ! -e $CLOCHE_POOL/templates/$t2 ]] ||
		{ echo "# left: $(ls "$CLOCHE_POOL/templates" | grep -E "^(race|extra)$$@")" >&2; return 1; }
}
# `btrfs send A B`: a second whole stream after the first one's end.
r=$(api POST /v1/templates "{\"import\":\"$work/both.stream\"}")
check "a stream with a second one appended (btrfs send A B): 400 ($(body_of "$r" | jq -r .error.message))" \
	test "$(status_of "$r")" = 400
check "... and neither subvolume was received" none_left
# A second subvolume inside the one stream, before its end marker: the
# first stream without its END (the last 10 bytes), then the second
# stream's commands without its 17-byte header.  `btrfs receive -e` alone
# would take both.
{ head -c -10 "$work/one.stream"; tail -c +18 "$work/two.stream"; } >"$work/inside.stream"
r=$(api POST /v1/templates "{\"import\":\"$work/inside.stream\"}")
check "a stream with a second subvolume before its end: 400 ($(body_of "$r" | jq -r .error.message))" \
	test "$(status_of "$r")" = 400
check "... and neither subvolume was received" none_left
r=$(api POST /v1/templates "{\"import\":\"$work/one.stream\"}")
check "the plain stream still imports (201)" test "$(status_of "$r")" = 201
node_stop

# --- 5. SIGTERM while a port-connect request is served ---------------------
hooks="connect-serve=1500,exit=3000"
check "cloche-node restarts with $hooks" node_start --test-hooks "$hooks"
n0=$(hook_seen connect-serve)
node_connect "$pre-nosuch" 8080 </dev/null >"$work/conn.out" 2>&1 &
conn_pid=$!
check "a port-connect request is being served" wait_hook connect-serve "$n0"
t0=$(now_ms)
node_stop
rc=$?
check "SIGTERM during the request: exit 0 ($rc, $(($(now_ms) - t0)) ms)" test "$rc" = 0
wait "$conn_pid"
check "the request got its answer before the agent went ($(cat "$work/conn.out"))" \
	grep -q 'no such sandbox' "$work/conn.out"
check "a clean stop: the node was freed after the request, not left to the exit" \
	bash -c 'grep -q "\"msg\":\"stopped\"" "$1" && ! grep -q "work in progress" "$1"' _ "$work/node.log"
check "no sanitizer report in the agent's log" no_sanitizer_report
check "every line the agent logged is JSON" node_log_is_json
tap_exit
