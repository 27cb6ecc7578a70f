#!/usr/bin/env bash
# Isolation and limits of cloche-node's sandboxes, seen from inside them.
# The test builds a small "internet" in a netns of its own (198.51.100.10,
# a documentation range, with names in /etc/hosts), then checks from inside
# sandbox A (allowlist) and B (egress none): no direct path to the node API,
# a host service, the test internet or the metadata address; through A's
# proxy only allowed names/ports pass, and private, link-local and the
# node's own addresses are refused even when allowlisted; Chromium in A
# loads an allowed page through the proxy; policies change at run time.
# Then a memory bomb in A is killed inside A while A and B stay healthy,
# and a fork bomb in A hits its pids limit while B stays healthy.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh
. tests/lib/inet.sh

pre="${CLOCHE_TEST_PREFIX:-t}-iso-$$"
node_setup "$pre"
work=$NODE_WORK

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	inet_down
	node_cleanup
}
trap cleanup EXIT

node_preflight

# The test internet: 198.51.100.10 (and the metadata address) behind a veth
# whose host end is 198.51.100.1, an address of this node.
inet_up 198.51.100 "$work"
ip -n "$INET_NS" addr add 169.254.169.254/32 dev eth0
ip route add 169.254.169.254/32 dev "$INET_VETH"
inet_host allowed.cloche.test denied.cloche.test 198.51.100.10
inet_host node.cloche.test 198.51.100.1
inet_host metadata.cloche.test 169.254.169.254
host_port=$(free_port)
host_ip=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
[[ -n $host_ip ]] || host_ip=$(hostname -I | cut -d' ' -f1)
inet_serve "$INET_NS" 198.51.100.10 8080 allowed-server-ok
inet_serve "$INET_NS" 198.51.100.10 8081 denied-server-ok
inet_serve "$INET_NS" 169.254.169.254 80 metadata-secret
inet_serve 0.0.0.0 "$host_port" host-service
inet_serve 198.51.100.1 8083 node-own-service
sleep 0.5
internet_up() { curl -s -m 3 http://allowed.cloche.test:8080/ | grep -q allowed-server-ok; }
check "the test internet answers from the host (so refusals below are the sandbox's)" internet_up
metadata_up() { curl -s -m 3 http://169.254.169.254/ | grep -q metadata-secret; }
check "the metadata address answers from the host" metadata_up
check "a host service on all addresses answers ($host_ip:$host_port)" \
	bash -c "curl -s -m 3 http://$host_ip:$host_port/ | grep -q host-service"

check "cloche-node starts" node_start
A="$pre-a"
B="$pre-b"
allow_a='{"allow":["allowed.cloche.test:8080","node.cloche.test:8083","metadata.cloche.test:80","169.254.169.254:80","127.0.0.1:*","localhost:*","10.0.2.15:*","198.51.100.1:*","'$host_ip':*"]}'
api POST /v1/sandboxes "{\"id\":\"$A\",\"memory_mb\":1024,\"pids\":384,\"egress\":$allow_a}" >"$work/ca" &
ca=$!
api POST /v1/sandboxes "{\"id\":\"$B\",\"memory_mb\":1024}" >"$work/cb"
wait "$ca"
check "sandbox A (allowlist) is ready" test "$(status_of "$(cat "$work/ca")")" = 201
check "sandbox B (egress none) is ready" test "$(status_of "$(cat "$work/cb")")" = 201
check "B's egress is none" test "$(body_of "$(cat "$work/cb")" | jq -r .egress)" = none

# in_sb ID SCRIPT: runs bash SCRIPT inside sandbox ID (as root).
in_sb() { sb_exec "$1" bash -c "$2" 2>&1; }

# Direct TCP from inside: prints open or closed.
direct() {
	in_sb "$1" "timeout 4 bash -c 'exec 3<>/dev/tcp/$2/$3' 2>/dev/null && echo open || echo closed"
}

# via_proxy ID HOST PORT [plain]: asks ID's proxy at 10.0.2.2:3128 for
# HOST:PORT (CONNECT, or an absolute-form GET with "plain"), then GET /.
# Prints the proxy's status line and the body.
via_proxy() {
	local script
	if [[ ${4:-} == plain ]]; then
		script="exec 3<>/dev/tcp/10.0.2.2/3128 || exit 1
printf 'GET http://$2:$3/ HTTP/1.1\r\nHost: $2:$3\r\n\r\n' >&3
timeout 5 cat <&3"
	else
		script="exec 3<>/dev/tcp/10.0.2.2/3128 || exit 1
printf 'CONNECT $2:$3 HTTP/1.1\r\nHost: $2:$3\r\n\r\n' >&3
IFS= read -r -t 5 status <&3; echo \"\$status\"
case \$status in *' 200 '*) ;; *) timeout 2 cat <&3; exit 0;; esac
while IFS= read -r -t 5 l <&3; do [[ \${l%\$'\r'} ]] || break; done
printf 'GET / HTTP/1.0\r\nHost: $2\r\n\r\n' >&3
timeout 5 cat <&3"
	fi
	in_sb "$1" "$script"
}

refused_direct() {
	local r
	r=$(direct "$@")
	[[ $r == closed ]] || { echo "# $2:$3 from $1: $r" >&2; return 1; }
}
for target in "10.0.2.2:$NODE_PORT" "$host_ip:$NODE_PORT" "127.0.0.1:$NODE_PORT" \
	"$host_ip:$host_port" "198.51.100.1:$host_port" "10.0.2.2:$host_port" \
	"198.51.100.10:8080" "169.254.169.254:80"; do
	check "A cannot connect directly to ${target}" refused_direct "$A" "${target%:*}" "${target##*:}"
done
check "B cannot connect directly to the test internet" refused_direct "$B" 198.51.100.10 8080
check "B has no proxy to talk to (egress none)" refused_direct "$B" 10.0.2.2 3128

proxy_ok() {
	local r
	r=$(via_proxy "$@")
	grep -q "allowed-server-ok" <<<"$r" || { echo "# $2:$3: $(head -c 300 <<<"$r")" >&2; return 1; }
}
proxy_refused() {
	local r
	r=$(via_proxy "$@")
	grep -q "^HTTP/1.1 403" <<<"$r" && ! grep -qE "secret|service|server-ok" <<<"$r" ||
		{ echo "# $2:$3: $(head -c 300 <<<"$r")" >&2; return 1; }
}
check "A reaches an allowed name and port through its proxy (CONNECT)" proxy_ok "$A" allowed.cloche.test 8080
check "A reaches it with a plain-HTTP proxy request too" proxy_ok "$A" allowed.cloche.test 8080 plain
check "A: an allowed name on another port is refused (403)" proxy_refused "$A" allowed.cloche.test 8081
check "A: a name not in the allowlist is refused (403)" proxy_refused "$A" denied.cloche.test 8081
check "A: the metadata address is refused although allowlisted" proxy_refused "$A" 169.254.169.254 80
check "A: a name resolving to the metadata address is refused" proxy_refused "$A" metadata.cloche.test 80
check "A: the node API on loopback is refused although allowlisted" proxy_refused "$A" 127.0.0.1 "$NODE_PORT"
check "A: localhost is refused" proxy_refused "$A" localhost "$NODE_PORT"
check "A: a name resolving to the node's own address is refused" proxy_refused "$A" node.cloche.test 8083
check "A: the node's own addresses are refused (host service)" proxy_refused "$A" "$host_ip" "$host_port"
check "A: the sandbox address (another sandbox's too) is refused" proxy_refused "$A" 10.0.2.15 8889
logged_denial() {
	grep '"msg":"egress"' "$NODE_WORK/node.log" | grep '"denied.cloche.test"' | grep -q '"verdict":"denied"'
}
check "the agent logs each refusal as a JSON line" logged_denial

# Chromium in A uses the proxy (init gives services http(s)_proxy).
browser_sees() {
	local out
	mcp_call "$A" 7999 browser_navigate "{\"url\":\"$1\"}" >/dev/null 2>&1
	out=$(mcp_call "$A" 7999 browser_snapshot '{}' 2>&1)
	grep -q "$2" <<<"$out" || { echo "# $(head -c 400 <<<"$out")" >&2; return 1; }
}
check "Chromium in A loads an allowed page through the proxy" \
	browser_sees http://allowed.cloche.test:8080/ allowed-server-ok
browser_blocked() { ! browser_sees http://denied.cloche.test:8081/ denied-server-ok 2>/dev/null; }
check "Chromium in A does not get a page that is not allowed" browser_blocked
shell_curl_env() {
	mcp_call "$A" 8889 run_command '{"command":"echo $https_proxy $no_proxy"}' | grep -q "http://10.0.2.2:3128 localhost"
}
check "shells in A get https_proxy and no_proxy" shell_curl_env

# Policies change at run time.
r=$(api PUT "/v1/sandboxes/$B/egress" '{"allow":["allowed.cloche.test:8080"]}')
check "PUT egress on B answers 200 with the new policy" \
	test "$(status_of "$r")" = 200 -a "$(body_of "$r" | jq -c .egress)" = '{"allow":["allowed.cloche.test:8080"]}'
check "B now reaches the allowed server" proxy_ok "$B" allowed.cloche.test 8080
check "B's policy is recorded in meta.json" \
	quiet jq -e '.egress.allow[0] == "allowed.cloche.test:8080"' "$CLOCHE_POOL/sandboxes/$B/meta.json"
r=$(api PUT "/v1/sandboxes/$B/egress" '{"allow":[""]}')
check "a malformed policy: 400, B keeps its policy" \
	test "$(status_of "$r")" = 400 -a "$(body_of "$(api GET "/v1/sandboxes/$B")" | jq -r '.egress.allow[0]')" = allowed.cloche.test:8080
r=$(api PUT "/v1/sandboxes/$B/egress" '"none"')
check "PUT egress none on B" test "$(status_of "$r")" = 200
check "B's proxy is gone again" refused_direct "$B" 10.0.2.2 3128
r=$(api PUT "/v1/sandboxes/$pre-nope/egress" '"none"')
check "PUT egress on an unknown sandbox: 404" test "$(status_of "$r")" = 404

# Memory bomb in A: cloche-init's guard kills it inside A.
t0=$(now_ms)
out=$(mcp_call "$A" 8889 run_command '{"command":"timeout 120 tail /dev/zero; echo bomb-exit=$?","timeout_ms":140000}' 2>&1)
echo "# memory bomb: $(($(now_ms) - t0)) ms: $(tr '\n' ' ' <<<"$out" | head -c 200)"
check "the memory bomb is killed inside A (SIGKILL, exit 137)" grep -q "bomb-exit=137" <<<"$out"
# Right after the bomb the health answer may be late (the sandbox gives its
# memory back, and a loaded machine is slower at it): A must come back to
# health, not answer within curl's 3 s on the first try.
echo "# A's health right after the bomb: $(sb_health_code "$A")"
check "A is healthy after the memory bomb (within 30 s)" sb_wait_ready "$A" 30
check "the host never had to kill anything in A's cgroup" \
	grep -qx "oom_kill 0" /sys/fs/cgroup/memory/"$A"/memory.oom_control
check "cloche-init logged the kill" grep -q "out of memory: killed the largest process" \
	"$CLOCHE_POOL/sandboxes/$A/console.log"
check "B is healthy after A's memory bomb" test "$(sb_health_code "$B")" = 200

# Fork bomb in A: it hits A's pids limit; B stays healthy throughout.
mcp_call "$A" 8889 run_command '{"command":"f(){ f | f & }; f; sleep 60","timeout_ms":90000}' \
	>"$work/forkbomb.out" 2>&1 &
fb=$!
b_bad=0
hit=0
for ((i = 0; i < 60; i++)); do
	sleep 1
	[[ "$(sb_health_code "$B")" == 200 ]] || ((b_bad++))
	ev=$(sed -n 's/^max //p' /sys/fs/cgroup/pids/"$A"/pids.events 2>/dev/null)
	st=$(body_of "$(api GET "/v1/sandboxes/$A")" | jq -r .state)
	if [[ ${ev:-0} -gt 0 || $st == failed ]]; then hit=1; break; fi
done
echo "# fork bomb: limit reached after ${i}s; A: $(body_of "$(api GET "/v1/sandboxes/$A")" | jq -c '{state, reason}')"
check "the fork bomb hits A's pids limit" test "$hit" = 1
for ((i = 0; i < 5; i++)); do
	sleep 1
	[[ "$(sb_health_code "$B")" == 200 ]] || ((b_bad++))
done
check "B stayed healthy during A's fork bomb" test "$b_bad" = 0
kill "$fb" 2>/dev/null
wait "$fb" 2>/dev/null
failed_with_reason() {
	local j i
	for ((i = 0; i < 30; i++)); do
		j=$(body_of "$(api GET "/v1/sandboxes/$A")")
		if [[ $(jq -r .state <<<"$j") == failed ]] && jq -r .reason <<<"$j" | grep -q "task limit"; then
			echo "# A after the fork bomb: $(jq -c '{state, reason}' <<<"$j")"
			return 0
		fi
		if [[ "$(sb_health_code "$A")" == 200 ]]; then
			echo "# A survived the fork bomb and is healthy"
			return 0
		fi
		sleep 1
	done
	echo "# $j" >&2
	return 1
}
check "A either survives or is reported failed with the pids reason" failed_with_reason

for id in "$A" "$B"; do
	r=$(api DELETE "/v1/sandboxes/$id")
	check "DELETE $id: 200" test "$(status_of "$r")" = 200
	check "nothing of $id is left" gone "$id"
done
check "every log line is JSON" node_log_is_json
check "cloche-node stops on SIGTERM with status 0" node_stop
tap_exit
