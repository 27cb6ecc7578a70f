#!/usr/bin/env bash
# mcp-browser inside a real sandbox: the desktop template boots under runsc;
# from the router netns the official MCP SDK client (tests/e2e/
# mcp-browser-test.mjs) drives the visible Chromium through port 7999 (tools,
# navigate, type, snapshot, stale refs, screenshot, evaluate, elements named
# by `ref` and by `target`, bad input; then a 1 MB page read by continuation
# and browser_find, uploads, network requests, PDF and the coordinate tools:
# tests/e2e/mcp-browser-pages-test.mjs);
# the browser runs on the VNC screen, not headless; killing Chromium alone
# makes mcp-browser exit, init restarts the pair, health and MCP recover.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh

template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
id=${CLOCHE_TEST_ID:-t-mcpb-$$} # several worktrees on one machine each name their own
url="http://10.0.2.15:7999/mcp"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { sb_down "$id" >/dev/null 2>&1; sb_agent_stop; }
trap cleanup EXIT

[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; tap_exit; }
check "the template has mcp-browser and the test page" test -x "$template/opt/cloche/bin/mcp-browser" -a \
	-f "$template/opt/cloche/share/test/form.html"
t0=$(now_ms)
check "runsc starts the sandbox" sb_up "$id" "$template"
check "health turns ready (browser painted and DevTools answering)" sb_wait_ready "$id" 180
echo "# boot to ready: $(($(now_ms) - t0)) ms"
health=$(sb_health "$id")
check "health reports the browser service ready" test "$(jq -r .services.browser.state <<<"$health")" = ready

(cd tests/e2e && sb_in_router "$id" node mcp-browser-test.mjs --url "$url")
rc=$?
[[ $rc == 0 ]] || not_ok "mcp-browser end-to-end script exited $rc"
# Big pages (continuation, find, depth), uploads of files mcp-shell wrote,
# network requests, PDF, the coordinate tools.
(cd tests/e2e && sb_in_router "$id" node mcp-browser-pages-test.mjs --url "$url" --shell "${url/7999/8889}")
rc=$?
[[ $rc == 0 ]] || not_ok "mcp-browser pages script exited $rc"

# The driven browser is the visible one: its window is on the X screen.
check "the driven Chromium is the one on the VNC screen" sb_exec "$id" /opt/cloche/bin/cloche-xprobe \
	--display :0 --class chromium --min-width 640 --min-height 480 --min-colours 8

# Kill Chromium itself (the child of mcp-browser): the pair comes back.
bpid=$(jq -r .services.browser.pid <<<"$(sb_health "$id")")
cpid=$(sb_exec "$id" /usr/bin/pgrep -o -P "$bpid" 2>/dev/null)
if [[ -n $cpid ]] && sb_exec "$id" /bin/kill -KILL "$cpid" >/dev/null 2>&1; then
	ok "kill -9 Chromium (pid $cpid, child of mcp-browser $bpid) inside the sandbox"
	deadline=$((SECONDS + 10))
	while ((SECONDS < deadline)); do
		[[ $(jq -r .services.browser.pid <<<"$(sb_health "$id")") != "$bpid" ]] && break
		sleep 0.1
	done
	t1=$(now_ms)
	if sb_wait_ready "$id" 120; then
		ok "health recovers after Chromium was killed ($(($(now_ms) - t1)) ms)"
		after=$(sb_health "$id")
		check "the browser service has a new pid and a counted restart" \
			test "$(jq -r .services.browser.pid <<<"$after")" != "$bpid" -a "$(jq -r .services.browser.restarts <<<"$after")" -ge 1
	else
		not_ok "health recovers after Chromium was killed"
	fi
	(cd tests/e2e && sb_in_router "$id" node mcp-browser-test.mjs --url "$url" --bench 5 >/dev/null)
	check "MCP answers again after the restart" test $? = 0
else
	not_ok "kill Chromium (child of mcp-browser $bpid) inside the sandbox"
fi

sb_down "$id"
check "down removes the sandbox" test ! -e "$(sb_dir "$id")"
tap_exit
