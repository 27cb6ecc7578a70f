#!/usr/bin/env bash
# Hibernation on one node (L1), with real runsc, btrfs and cloche-proxy in
# front: a sandbox with a file written through mcp-shell and a page with
# form state in mcp-browser hibernates and wakes with both intact, and the
# MCP session that wrote them (held through the proxy) carries on; right
# after traffic from a server inside that closes first (python's
# http.server) it hibernates at once (the proxy resets, no TIME_WAIT is
# left inside); fork into 3
# gives children with the parent's file and page that diverge; an open
# connection refuses the checkpoint (409) and leaves the sandbox running;
# a checkpoint that runsc fails (an open, deleted file on the rootfs)
# boots the sandbox again with its files; too little disk is a 507 before
# anything happens; kill -9 of the agent in a checkpoint and in a restore
# leaves a running or restorable sandbox and no half checkpoint.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh

pre="${CLOCHE_TEST_PREFIX:-t}-hib-$$"
node_setup "$pre"
work=$NODE_WORK
PX=${BUILD:-build}/bin/cloche-proxy
D=cloche.localhost
px_port=$(free_port) px_admin=$(free_port)
px_pid= sess_pid=
A=$pre-a

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[[ -z $sess_pid ]] || kill "$sess_pid" 2>/dev/null
	[[ -z $px_pid ]] || kill -9 "$px_pid" 2>/dev/null
	exec 7>&- 2>/dev/null
	node_cleanup
}
trap cleanup EXIT
node_preflight

head -c 48 /dev/urandom | base64 | tr -d '\n' >"$work/key"
"$PX" --listen 127.0.0.1 --port "$px_port" --admin-port "$px_admin" --domain "$D" --workers 1 \
	--token-key-file "$work/key" --node-credential-file "$work/cred" \
	--node-socket "$work/node.sock" --wait-timeout 30s >>"$work/proxy.log" 2>&1 &
px_pid=$!
check "the node agent starts with the proxy's admin URL" \
	node_start --proxy-admin "http://127.0.0.1:$px_admin"
token() { "$PX" --token-key-file "$work/key" token "$1"; }
# node_up: a restart that boots a sandbox again serves only after that.
node_up() { wait_for 90 curl -sf -o /dev/null "$NODE_BASE/healthz"; }
# px_curl PORT ID PATH [curl options...]: through the proxy, with ID's token.
px_curl() {
	local port=$1 id=$2 path=$3
	shift 3
	curl -s -m 30 --resolve "$port-$id.$D:$px_port:127.0.0.1" \
		-H "Authorization: Bearer $(token "$id")" "$@" "http://$port-$id.$D:$px_port$path"
}
state_of() { body_of "$(api GET "/v1/sandboxes/$1")" | jq -r .state; }
# shell ID COMMAND: the command's output (run_command's text without its
# "[exit code: N]" line).
shell() {
	mcp_call "$1" 8889 run_command "$(jq -cn --arg c "$2" '{command:$c}')" |
		sed -e '/^\[exit code: [0-9]*\]$/d' -e '/^$/d'
}
page_state() { # ID: "title|input value" of the open page
	mcp_call "$1" 7999 browser_evaluate \
		'{"function":"() => document.title + \"|\" + document.querySelector(\"#q\").value"}' |
		jq -r .
}

r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
check "sandbox $A is made" test "$(status_of "$r")" = 201

# --- state to keep: a file through an MCP session held via the proxy, a page
mkfifo "$work/sess.in"
node tests/e2e/mcp-session.mjs --url "http://8889-$A.$D:$px_port/mcp" --token "$(token "$A")" \
	<"$work/sess.in" >"$work/sess.out" 2>"$work/sess.err" &
sess_pid=$!
exec 7>"$work/sess.in"
# sess TOOL ARGS: one call in the held session; prints its JSON line.
sess() {
	local n i
	n=$(wc -l <"$work/sess.out")
	jq -cn --arg t "$1" --argjson a "$2" '{tool:$t, args:$a}' >&7
	for ((i = 0; i < 600; i++)); do
		(($(wc -l <"$work/sess.out") > n)) && { sed -n "$((n + 1))p" "$work/sess.out"; return; }
		sleep 0.1
	done
	echo '{"ok":false,"error":"no answer in 60 s"}'
}
s1=$(sess write_file '{"path":"note.txt","content":"written before the checkpoint"}')
check "a file is written through an MCP session held by the proxy" \
	test "$(jq -r .ok <<<"$s1")" = true
session=$(jq -r .session <<<"$s1")
mcp_call "$A" 8889 write_file '{"path":"form.html","content":"<title>Kept page</title><input id=q>"}' >/dev/null
mcp_call "$A" 7999 browser_navigate '{"url":"file:///home/agent/form.html"}' >/dev/null
mcp_call "$A" 7999 browser_evaluate \
	'{"function":"() => { document.querySelector(\"#q\").value = \"typed before\"; return 1 }"}' >/dev/null
check "the page and its form state are set" test "$(page_state "$A")" = "Kept page|typed before"

# --- a server inside that closes connections first, reached through the proxy
mcp_call "$A" 8889 start_process '{"command":"python3 -m http.server 8000 --bind 0.0.0.0"}' >/dev/null
for ((i = 0; i < 50; i++)); do
	[[ $(px_curl 8000 "$A" /note.txt) == "written before the checkpoint" ]] && break
	sleep 0.2
done
check "python's http.server inside answers through the proxy" \
	test "$(px_curl 8000 "$A" /note.txt)" = "written before the checkpoint"

# --- hibernate right after that traffic
t0=$(now_ms)
r=$(api POST "/v1/sandboxes/$A/hibernate")
t1=$(now_ms)
check "hibernate right after traffic succeeds ($(status_of "$r"), $((t1 - t0)) ms)" \
	test "$(status_of "$r")" = 200
check "... at once: the server closed first, the proxy reset its end, no TIME_WAIT to wait out" \
	test $((t1 - t0)) -lt 30000
check "state hibernated, generation 1" \
	test "$(body_of "$r" | jq -r '.state + " " + (.generation|tostring)')" = "hibernated 1"
check "nothing runs: no netns pair, no container, no live rootfs" \
	eval "[[ ! -e /var/run/netns/S-$A && ! -e $CLOCHE_POOL/sandboxes/$A/rootfs ]] && ! pgrep -f 'runsc.*$A' >/dev/null"
check "the generation is complete: image, read-only rootfs, manifest" \
	eval "[[ -s $CLOCHE_POOL/checkpoints/$A/1/state/checkpoint.img && -s $CLOCHE_POOL/checkpoints/$A/1/manifest.json ]] && btrfs property get $CLOCHE_POOL/checkpoints/$A/1/rootfs ro | grep -q true"
echo "# checkpoint: $(body_of "$r" | jq -c .checkpoint)"

# --- wake
r=$(api POST "/v1/sandboxes/$A/wake")
check "wake answers 200 ready (wake_ms $(body_of "$r" | jq -r .wake_ms))" \
	test "$(status_of "$r") $(body_of "$r" | jq -r .state)" = "200 ready"
s2=$(sess read_file '{"path":"note.txt"}')
check "the held MCP session carries on after the wake and reads the file" \
	test "$(jq -r .text <<<"$s2")" = "written before the checkpoint"
check "... with the same session id" test "$(jq -r .session <<<"$s2")" = "$session"
check "the page's title and form state are as they were" \
	test "$(page_state "$A")" = "Kept page|typed before"
check "the server started before is still running" \
	test "$(shell "$A" "pgrep -f http.server >/dev/null && echo running")" = running
check "the used generation is removed after the wake" test ! -e "$CLOCHE_POOL/checkpoints/$A/1"

# --- fork into 3
ids=("$pre-c1" "$pre-c2" "$pre-c3")
r=$(api POST "/v1/sandboxes/$A/fork" "$(printf '%s\n' "${ids[@]}" | jq -R . | jq -sc '{ids: .}')")
check "fork into 3 answers 200 with 3 ready children ($(body_of "$r" | jq -c '{fork_ms, failed}'))" \
	test "$(status_of "$r") $(body_of "$r" | jq -r '[.children[] | select(.state == "ready")] | length')" = "200 3"
check "the parent is ready again" test "$(state_of "$A")" = ready
# Each child gets secrets of its own before it is handed out: no link or
# view secret of the parent or of a sibling opens it, and the parent keeps
# its own.
view_of() { # SECRET: its view secret, as cloche-vnc derives it
	printf 'cloche-vnc view-only' | openssl dgst -sha256 -hmac "$1" -binary | base64 -w0 |
		tr '+/' '-_' | tr -d '=' | cut -c1-32
}
pa=$(sb_vnc_secret "$A") c1=$(sb_vnc_secret "${ids[0]}") c2=$(sb_vnc_secret "${ids[1]}")
check "each child has a VNC secret of its own (not the parent's, not a sibling's)" \
	bash -c '[[ -n $1 && -n $2 && -n $3 && $1 != "$3" && $2 != "$3" && $1 != "$2" ]]' _ "$c1" "$c2" "$pa"
check "a child's desktop opens with its own secret and its own view secret (101)" \
	test "$(sb_ws_code "${ids[0]}" "secret=$c1") $(sb_ws_code "${ids[0]}" "view=$(view_of "$c1")")" = "101 101"
check "... not with the parent's secret or view secret, nor a sibling's (403)" \
	test "$(sb_ws_code "${ids[0]}" "secret=$pa") $(sb_ws_code "${ids[0]}" "view=$(view_of "$pa")") $(sb_ws_code "${ids[0]}" "secret=$c2") $(sb_ws_code "${ids[1]}" "view=$(view_of "$c1")")" = "403 403 403 403"
check "the parent still opens with its own secret, not with a child's" \
	test "$(sb_ws_code "$A" "secret=$pa") $(sb_ws_code "$A" "secret=$c1")" = "101 403"
r=$(api POST "/v1/sandboxes/${ids[0]}/recordings" '{}')
rec=$(body_of "$r" | jq -r '.recording.id // .id // empty')
r2=$(api POST "/v1/sandboxes/${ids[0]}/recordings/${rec:-none}/stop" '{}')
check "a child's recorder took its new secret: a recording starts and stops ($(status_of "$r") $(status_of "$r2"))" \
	test "$(status_of "$r" | cut -c1-2) $(status_of "$r2")" = "20 200"
for c in "${ids[@]}"; do
	check "child $c has the parent's file" \
		test "$(shell "$c" "cat note.txt")" = "written before the checkpoint"
	check "child $c has the parent's page" test "$(page_state "$c")" = "Kept page|typed before"
	shell "$c" "echo $c > mine.txt" >/dev/null
	mcp_call "$c" 7999 browser_evaluate \
		"{\"function\":\"() => { document.querySelector('#q').value = '$c'; return 1 }\"}" >/dev/null
done
diverged=1
for c in "${ids[@]}"; do
	[[ $(shell "$c" "cat mine.txt") == "$c" && $(page_state "$c") == "Kept page|$c" ]] || diverged=0
done
check "the children diverge independently (own file, own form state)" test "$diverged" = 1
check "the parent keeps its own state" \
	test "$(shell "$A" "cat mine.txt 2>&1; cat note.txt")|$(page_state "$A")" = \
	"cat: mine.txt: No such file or directory
written before the checkpoint|Kept page|typed before"
for c in "${ids[@]}"; do api DELETE "/v1/sandboxes/$c" >/dev/null; done
gone_all=1
for c in "${ids[@]}"; do gone "$c" || gone_all=0; done
check "the children are removed completely" test "$gone_all" = 1

# --- an open connection refuses the checkpoint, and the sandbox runs on
# The holder says when it is connected: on a loaded machine python may take
# longer to start than any fixed pause, and a connection that arrives in the
# middle of the checkpoint is not the case under test.
rm -f "$work/held"
nsenter --net="/var/run/netns/R-$A" python3 -c '
import socket, sys, time
s = socket.create_connection(("10.0.2.15", 8889))
open(sys.argv[1], "w").close()
time.sleep(30)' "$work/held" &
holder=$!
wait_for 20 test -e "$work/held"
r=$(api POST "/v1/sandboxes/$A/hibernate")
check "an open connection through the interface refuses the checkpoint: 409" \
	test "$(status_of "$r")" = 409
echo "# $(body_of "$r" | jq -r .error.message)"
check "... and the sandbox runs on untouched" \
	test "$(state_of "$A")|$(shell "$A" "cat note.txt")" = "ready|written before the checkpoint"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# --- too little disk: 507 before anything happens
free_mb=$(($(stat -f -c '%a*%S' "$CLOCHE_POOL") / 1048576))
fallocate -l "$((free_mb - 1500))M" "$CLOCHE_POOL/.fill-$pre" 2>/dev/null
r=$(api POST "/v1/sandboxes/$A/hibernate")
rm -f "$CLOCHE_POOL/.fill-$pre"
btrfs -q filesystem sync "$CLOCHE_POOL" # the space is free once committed
check "a pool without room for the image: 507, nothing touched" \
	test "$(status_of "$r") $(state_of "$A")" = "507 ready"

# --- runsc fails the checkpoint: the sandbox boots again with its files.
# The fault: while the agent pauses before runsc checkpoint, a file takes
# the image's name (runsc opens it exclusively).
node_stop
node_start --proxy-admin "http://127.0.0.1:$px_admin" --test-hooks checkpoint=3000
api POST "/v1/sandboxes/$A/hibernate" >"$work/failed.out" &
poster=$!
wait_for 60 compgen -G "$CLOCHE_POOL/checkpoints/$A/*.part/state" >/dev/null
for part in "$CLOCHE_POOL/checkpoints/$A"/*.part; do : >"$part/state/checkpoint.img"; done
wait "$poster"
r=$(cat "$work/failed.out")
echo "# $(body_of "$r" | jq -r .error.message)"
check "a checkpoint runsc fails answers 500 and says the sandbox was rebooted" \
	eval "[[ '$(status_of "$r")' == 500 ]] && grep -q rebooted <<<'$(body_of "$r" | jq -r .error.message)'"
check "... it is ready again, with its files, and last_error says what happened" \
	test "$(state_of "$A")|$(shell "$A" "cat note.txt")|$(body_of "$(api GET "/v1/sandboxes/$A")" | jq -r '.last_error | length > 0')" = \
	"ready|written before the checkpoint|true"
check "no unfinished generation is left" \
	eval "! compgen -G '$CLOCHE_POOL/checkpoints/$A/*.part' >/dev/null"
check "the failure is counted" \
	test "$(body_of "$(api GET /v1/capacity)" | jq -r .checkpoints.failed)" -ge 1

# --- kill -9 of the agent in a checkpoint, then in a restore
node_stop
node_start --proxy-admin "http://127.0.0.1:$px_admin" --test-hooks checkpoint-done=8000
api POST "/v1/sandboxes/$A/hibernate" >/dev/null &
wait_for 30 grep -q '"checkpoint-done"' "$work/node.log"
kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null
node_pid=
check "the agent is killed while a checkpoint is under way" \
	eval "compgen -G '$CLOCHE_POOL/checkpoints/$A/*.part' >/dev/null"
node_start --proxy-admin "http://127.0.0.1:$px_admin" --test-hooks restore=8000 || node_up
check "after the restart the sandbox is running again with its files; no half checkpoint is used" \
	test "$(state_of "$A")|$(shell "$A" "cat note.txt")" = "ready|written before the checkpoint"
check "... and none is left" eval "[[ ! -e $CLOCHE_POOL/checkpoints/$A ]]"
r=$(api POST "/v1/sandboxes/$A/hibernate")
check "it hibernates again" test "$(status_of "$r")" = 200
api POST "/v1/sandboxes/$A/wake" >/dev/null &
wait_for 30 grep -q '"restore"' "$work/node.log"
kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null
node_pid=
node_start --proxy-admin "http://127.0.0.1:$px_admin"
check "killed in a restore: after the restart it is hibernated, restorable" \
	test "$(state_of "$A")" = hibernated
r=$(api POST "/v1/sandboxes/$A/wake")
check "... and wakes with its files" \
	test "$(status_of "$r")|$(shell "$A" "cat note.txt")" = "200|written before the checkpoint"

# --- a hibernated sandbox is destroyed completely
api POST "/v1/sandboxes/$A/hibernate" >/dev/null
r=$(api DELETE "/v1/sandboxes/$A")
check "DELETE of a hibernated sandbox: 200" test "$(status_of "$r")" = 200
check "nothing is left of it (checkpoints included)" \
	eval "gone $A && [[ ! -e $CLOCHE_POOL/checkpoints/$A ]]"
check "the agent exits cleanly on SIGTERM" node_stop
check "every line the agent logged is JSON" node_log_is_json
tap_exit
