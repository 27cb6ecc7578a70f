#!/usr/bin/env bash
# mcp-shell, tested by clients nobody here wrote:
#  (a) on the host, the MCP conformance suite (server-initialize, ping,
#      tools-list, dns-rebinding-protection) against mcp-shell on a free port;
#  (b) in a sandbox booted from the template, the official MCP SDK client
#      from the router netns (tests/e2e/mcp-shell-test.mjs): tools, timeouts
#      that kill whole process trees, output caps, files, background
#      processes, progress, cancellation, the `agent` user, and bad input
#      over raw HTTP;
#  (c) on the host build, its ASan+UBSan build and in the sandbox: many
#      tool calls at once in one and in several sessions, and glob/grep over
#      a 500-deep tree, symlink loops and 100,000 entries in one directory
#      (tests/e2e/mcp-shell-stress.mjs).
# Other conformance scenarios need fixture tools/resources/prompts that a
# shell server does not have; docs/mcp.md lists them and why.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/mcp.sh
. tests/lib/sandbox.sh

bin=build/bin/mcp-shell
template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
id="t-mcpsh-$$"
work=$(mktemp -d)
pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	sb_down "$id" >/dev/null 2>&1
	sb_agent_stop
	rm -rf "$work"
}
trap cleanup EXIT

# stress PORT LABEL: many calls at once, deep and wide trees (tests/e2e/
# mcp-shell-stress.mjs) against the server on PORT; one check line.
stress() {
	local out="$work/stress-$1.txt" rc
	node tests/e2e/mcp-shell-stress.mjs --url "http://127.0.0.1:$1/mcp" --dir "$work" >"$out" 2>&1
	rc=$?
	check "parallel calls and deep/wide trees against the $2 ($(grep -c '^ok' "$out") checks)" test "$rc" = 0
	[[ $rc == 0 ]] || grep '^not ok' "$out" | sed "s/^/# $2: /"
}

# --- (a) conformance suite against the host build -------------------------
port=$(free_port)
(cd "$work" && exec "$OLDPWD/$bin" --listen 127.0.0.1 --port "$port") 2>"$work/mcp-shell.log" &
pid=$!
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break
	sleep 0.1
done
check "mcp-shell listens on the host (port $port)" curl -s -o /dev/null "http://127.0.0.1:$port/mcp"

for s in $MCP_CONFORMANCE_SCENARIOS server-sse-multiple-streams; do
	mcp_conformance "http://127.0.0.1:$port/mcp" "$s" "$work"
done

# The SDK client and the raw checks against the host build too (as root).
node tests/e2e/mcp-shell-test.mjs --url "http://127.0.0.1:$port/mcp" --dir "$work" >"$work/host-e2e.txt" 2>&1
rc=$?
check "SDK client end to end against the host build ($(grep -c '^ok' "$work/host-e2e.txt") checks)" test "$rc" = 0
[[ $rc == 0 ]] || grep '^not ok' "$work/host-e2e.txt" | sed 's/^/# host: /'
stress "$port" host

kill -TERM "$pid"
t0=$(now_ms)
wait "$pid"
rc=$?
check "SIGTERM stops mcp-shell cleanly (exit $rc in $(($(now_ms) - t0)) ms)" test "$rc" = 0
pid=
check "every call was logged as one JSON line" bash -c "grep -c '\"msg\":\"mcp call\"' '$work/mcp-shell.log' | grep -qv '^0$'"

# The same end-to-end run against the ASan + UBSan build, when there is one.
san=build-san/bin/mcp-shell
if [[ -x $san ]]; then
	port=$(free_port)
	(cd "$work" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		exec "$OLDPWD/$san" --listen 127.0.0.1 --port "$port") 2>"$work/mcp-shell-san.log" &
	pid=$!
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break
		sleep 0.1
	done
	node tests/e2e/mcp-shell-test.mjs --url "http://127.0.0.1:$port/mcp" --dir "$work" >"$work/san-e2e.txt" 2>&1
	rc=$?
	check "SDK client end to end against the ASan+UBSan build ($(grep -c '^ok' "$work/san-e2e.txt") checks)" test "$rc" = 0
	stress "$port" "ASan+UBSan build"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	pid=
	check "the sanitizer build exits cleanly (exit $rc) with no sanitizer report" \
		bash -c "[[ $rc == 0 ]] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error' '$work/mcp-shell-san.log'"
fi

# --- (b) inside a sandbox, as the agent would use it -----------------------
if [[ -z $template ]]; then
	not_ok "a desktop template exists (run make template)"
	tap_exit
fi
check "the sandbox boots from $(basename "$template")" sb_up "$id" "$template"
check "health turns ready with mcp-shell in the service table" sb_wait_ready "$id" 180
check "health reports mcp-shell ready" test "$(jq -r '.services["mcp-shell"].state' <<<"$(sb_health "$id")")" = ready
sb_in_router "$id" node tests/e2e/mcp-shell-test.mjs --url http://10.0.2.15:8889/mcp --user agent
rc=$?
[[ $rc == 0 ]] || not_ok "the SDK end-to-end client exited $rc"
sb_in_router "$id" node tests/e2e/mcp-shell-stress.mjs --url http://10.0.2.15:8889/mcp --user agent \
	--dir /home/agent --wide "${CLOCHE_STRESS_WIDE:-100000}"
rc=$?
[[ $rc == 0 ]] || not_ok "the stress client exited $rc"
check "mcp-shell never restarted in the sandbox" \
	test "$(jq -r '.services["mcp-shell"].restarts' <<<"$(sb_health "$id")")" = 0
tap_exit
