#!/usr/bin/env bash
# The desktop template boots under real runsc on a fresh btrfs snapshot, in
# its own netns pair: health turns ready; a real VNC client (vncsnapshot)
# captures a frame with Chromium's window; noVNC's page in headless
# Chromium (playwright-core) connects, renders, and a click and keys sent
# through VNC change the screen; init brings back a killed browser service (mcp-browser + Chromium) and a
# killed cloche-vnc; the agent (uid 1000) can neither signal, ptrace nor
# take the ports of the services people rely on, also while one restarts; SIGTERM stops the sandbox within its bound; nothing is
# left behind.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh

template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
id="t-boot-$$"
work=$(mktemp -d)
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	sb_down "$id" >/dev/null 2>&1
	sb_agent_stop
	rm -rf "$work"
}
trap cleanup EXIT

[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; tap_exit; }

t0=$(now_ms)
check "runsc starts the sandbox on a snapshot of $(basename "$template")" sb_up "$id" "$template"
check "health turns ready" sb_wait_ready "$id" 180
echo "# boot to ready: $(($(now_ms) - t0)) ms"
health=$(sb_health "$id")
echo "# health: $health"
for svc in xvfb vnc browser; do
	check "health reports $svc ready" test "$(jq -r ".services.$svc.state" <<<"$health")" = ready
done
check "the rootfs is a btrfs snapshot" btrfs subvolume show "$(sb_dir "$id")/rootfs" >/dev/null

# A real VNC client through the router netns, as the proxy will connect.
# The sandbox's secret is its VNC password: vncsnapshot reads it from a
# file in VNC's own obfuscated format (DES with VNC's fixed key).
secret=$(sb_vnc_secret "$id")
printf '%s' "${secret:0:8}" | openssl enc -des-ecb -provider legacy -provider default \
	-K e84ad660c4721ae0 -nopad -nosalt >"$work/vncpasswd" 2>/dev/null
if sb_in_router "$id" timeout 30 vncsnapshot -quiet -allowblank -passwd "$work/vncpasswd" \
	10.0.2.15:0 "$work/snap.jpg" >/dev/null 2>&1; then
	ok "vncsnapshot captures a frame (with the sandbox's secret as VNC password)"
else
	not_ok "vncsnapshot captures a frame (with the sandbox's secret as VNC password)"
fi
if sb_in_router "$id" timeout 30 vncsnapshot -quiet -allowblank 10.0.2.15:0 "$work/nopass.jpg" \
	</dev/null >/dev/null 2>&1; then
	not_ok "vncsnapshot without the password gets nothing"
else
	ok "vncsnapshot without the password gets nothing"
fi

# The secret is in the container's environment, but neither init (gVisor
# lets every user read /proc/1/environ) nor cloche-vnc shows it to the user.
vnc_pid=$(jq -r '.services.vnc.pid' <<<"$(sb_health "$id")")
shown=$(sb_runsc "$id" exec --user 1000:1000 "$id" cat /proc/1/environ "/proc/$vnc_pid/environ" 2>/dev/null |
	tr '\0' '\n' | grep -c "^CLOCHE_VNC_SECRET=.")
check "the secret is not readable in init's or cloche-vnc's environment ($shown shown)" test "$shown" = 0

# The browser half runs inside the router netns too, so it reaches
# 10.0.2.15 exactly as a proxied browser would: one link with the secret.
sb_in_router "$id" node tests/e2e/novnc-test.mjs --url "http://10.0.2.15:6080/?secret=$secret" \
	--snapshot "$work/snap.jpg" --out "$work"
rc=$?
[[ $rc == 0 ]] || not_ok "noVNC end-to-end script exited $rc"

# The agent, from its own shell (uid 1000, as mcp-shell runs its commands),
# against the services people and the node rely on (docs/security.md).
as_agent() { sb_runsc "$id" exec --user 1000:1000 "$id" python3 - "$@" <tests/lib/agent-attack.py 2>&1; }
restarts_before=$(sb_health "$id" | jq -c '[.services[] | .restarts] | add')
tried=$(as_agent signals)
echo "$tried" | sed 's/^/# agent: /'
check "the agent can neither signal nor ptrace Xvfb, cloche-vnc, mcp-desktop, cloche-rec ($(grep -c ' refused ' <<<"$tried") attempts refused)" \
	bash -c "[[ \$(grep -c ' refused ' <<<'$tried') == 20 ]] && ! grep -q ' ok\$' <<<'$tried'"
check "... and none of them restarted" test "$(sb_health "$id" | jq -c '[.services[] | .restarts] | add')" = "$restarts_before"
tried=$(as_agent bind 1)
check "the agent cannot bind 6080, 5900, 8100, 8070 (any address) or the control socket ($(tail -1 <<<"$tried"))" \
	bash -c "! grep -q ' ok\$' <<<'$tried' && grep -q '^tries [1-9]' <<<'$tried'"

# Kill a service inside the sandbox; cloche-init must bring it back.
restart_check() {
	local svc=$1 pid before after deadline
	before=$(sb_health "$id")
	pid=$(jq -r ".services.$svc.pid" <<<"$before")
	if ! sb_exec "$id" /bin/kill -KILL "$pid" >/dev/null 2>&1; then
		not_ok "kill $svc (pid $pid) inside the sandbox"
		return
	fi
	ok "kill -9 $svc (pid $pid) inside the sandbox"
	deadline=$((SECONDS + 5))
	while ((SECONDS < deadline)); do
		[[ $(jq -r ".services.$svc.pid" <<<"$(sb_health "$id")") != "$pid" ]] && break
		sleep 0.1
	done
	local t1
	t1=$(now_ms)
	if sb_wait_ready "$id" 120; then
		after=$(sb_health "$id")
		ok "health recovers after $svc was killed ($(($(now_ms) - t1)) ms)"
		check "$svc has a new pid and a counted restart" test "$(jq -r ".services.$svc.pid" <<<"$after")" != "$pid" -a \
			"$(jq -r ".services.$svc.restarts" <<<"$after")" -ge 1
	else
		not_ok "health recovers after $svc was killed"
	fi
}
restart_check browser # mcp-browser and the Chromium it owns (killing Chromium alone: test-mcp-browser.sh)
# While cloche-vnc is killed and restarted, the agent keeps trying to take
# its ports and the control socket: init holds them throughout.
as_agent bind 6 >"$work/binds" &
binder=$!
sleep 0.5
restart_check vnc
wait "$binder"
check "... the agent took none of them during the restart ($(tail -1 "$work/binds"))" \
	bash -c "! grep -q ' ok\$' '$work/binds' && grep -q '^tries [1-9]' '$work/binds'"
code=$(sb_in_router "$id" curl -sL -c "$work/jar" -b "$work/jar" -o "$work/page" -w "%{http_code}" -m 5 "http://10.0.2.15:6080/?secret=$secret")
check "after the restart 6080 is cloche-vnc's page again (HTTP $code)" bash -c "[[ $code == 200 ]] && grep -qi novnc '$work/page'"

# SIGTERM to the container's init: services stop in order, within the bound.
t1=$(now_ms)
sb_runsc "$id" kill "$id" TERM >/dev/null 2>&1
while [[ $(sb_state "$id") == running ]] && (($(now_ms) - t1 < 15000)); do sleep 0.1; done
stop_ms=$(($(now_ms) - t1))
check "SIGTERM stops the sandbox within 10 s ($stop_ms ms)" test "$stop_ms" -lt 10000
check "init logged an orderly stop" grep -q '"all services stopped"' "$(sb_dir "$id")/console.log"

sb_down "$id"
check "down removes the sandbox directory" test ! -e "$(sb_dir "$id")"
check "down removes both network namespaces" test ! -e "/var/run/netns/S-$id" -a ! -e "/var/run/netns/R-$id"
check "no runsc process is left for the sandbox" bash -c "! pgrep -f '[r]unsc.*$id' >/dev/null"
tap_exit
