#!/usr/bin/env bash
# cloche-init's supervision on the host (as a child subreaper instead of PID
# 1): dependency order, readiness, output relay, orphan reaping, restart
# with backoff, restarting dependents, the SIGTERM -> SIGKILL bound, and
# clear errors for bad tables and flags.  Fast and deterministic; the same
# behaviour inside a sandbox is covered by test-boot.sh.
# sanitize: yes
# lane: host
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

bin=${BUILD:-build}/bin/cloche-init
work=$(mktemp -d)
pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	:
	[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
	pkill -KILL -f "${work}[/]" 2>/dev/null
	[[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

port=$(free_port)
health() { curl -s -m 2 "http://127.0.0.1:$port/health"; }
field() { health | jq -r "$1"; }
# wait_health SECONDS JQ-EXPR: until the expression is true of the health answer.
# shellcheck disable=SC2317  # health_is is called by wait_for
health_is() { [[ $(field "$1" 2>/dev/null) == true ]]; }
wait_health() { wait_for "$1" health_is "$2"; }

# base: a server readiness-probed over a unix socket; dependent: starts after
# it, leaves an orphan behind that exits at once, and prints to stdout/err;
# flapper: dies at once, forever; stubborn: ignores SIGTERM.
cat >"$work/init.json" <<JSON
{
  "stop_timeout_ms": 1500,
  "env": {"WORK": "$work"},
  "services": [
    {"name": "dependent", "after": ["base"],
     "argv": ["/bin/sh", "-c", "(sleep 0.1 &); echo hello-out; echo hello-err >&2; sleep 1000 & wait; : $work/"]},
    {"name": "base", "argv": ["/usr/bin/socat", "UNIX-LISTEN:$work/base.sock,fork,unlink-early", "EXEC:/bin/cat"],
     "ready": {"unix": "$work/base.sock"}},
    {"name": "flapper", "argv": ["/bin/sh", "-c", "exit 3"]},
    {"name": "stubborn", "argv": ["/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.2; done; : $work/"]}
  ]
}
JSON

"$bin" --services "$work/init.json" --health-port "$port" --health-listen 127.0.0.1 >"$work/log" 2>&1 &
pid=$!
check "health answers 503 until every service is ready, with each state" \
	bash -c "sleep 0.3; curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health | grep -q 503"
check "the dependency becomes ready and the dependent starts after it" \
	wait_health 10 '.services.base.state == "ready" and .services.dependent.state == "ready"'
started_base=$(grep -n '"service started","svc":"base"' "$work/log" | head -1 | cut -d: -f1)
started_dep=$(grep -n '"service started","svc":"dependent"' "$work/log" | head -1 | cut -d: -f1)
check "start order follows after (base line $started_base < dependent line $started_dep)" test "${started_base:-9999}" -lt "${started_dep:-0}"
check "service output is relayed as JSON lines tagged with the service" \
	bash -c "grep -q '\"msg\":\"hello-out\",\"svc\":\"dependent\",\"src\":\"output\"' '$work/log' && grep -q '\"msg\":\"hello-err\"' '$work/log'"
sleep 0.5
zombies=$(ps --ppid "$pid" -o stat= | grep -c '^Z') # pgrep cannot select by state
check "orphans re-parented to init are reaped (zombies: $zombies)" test "$zombies" = 0

# The delays init chose, from its log, rather than restarts counted at
# fixed times: this suite may share the machine with another lane of make
# test, and a loaded machine stretches every sleep here.
wait_health 20 '.services.flapper.restarts >= 4'
r=$(field .services.flapper.restarts)
delays=$(grep '"svc":"flapper"' "$work/log" | grep -o '"restart_in_ms":[0-9]*' | cut -d: -f2 | head -n 4 | xargs)
check "a dying service is restarted with growing backoff ($r restarts; delays $delays ms)" \
	test "$r" -ge 4 -a "$delays" = "250 500 1000 2000"
check "health stays 503 while one service is down, reporting exit status" \
	test "$(field '.services.flapper.last_exit')" = "exit 3"

dep_pid=$(field .services.dependent.pid)
base_pid=$(field .services.base.pid)
kill -KILL "$base_pid"
check "a dependency that dies is restarted" wait_health 10 ".services.base.pid != $base_pid and .services.base.state == \"ready\""
check "its dependent is restarted too, after it" wait_health 10 ".services.dependent.pid != $dep_pid and .services.dependent.state == \"ready\""

t0=$(now_ms)
kill -TERM "$pid"
wait "$pid"
rc=$?
ms=$(($(now_ms) - t0))
pid=
check "SIGTERM: init exits 0 (got $rc)" test "$rc" = 0
check "a service ignoring SIGTERM is killed at the bound (stopped in $ms ms, bound 1500)" test "$ms" -ge 1400 -a "$ms" -lt 4000
# "[/]" keeps the pattern from matching this check's own command line.
check "nothing init started survives it" bash -c "! pgrep -f '${work}[/]' >/dev/null"

printf '{"services":[{"name":"a","argv":["/bin/true"],"after":["b"]}]}' >"$work/bad.json"
out=$("$bin" --services "$work/bad.json" --health-port 0 2>&1)
rc=$?
check "a bad table exits 1 naming the problem" bash -c "[[ $rc == 1 ]] && grep -q 'depends on unknown service .b.' <<<'$out'"
"$bin" --no-such-flag >/dev/null 2>&1
check "an unknown flag exits 2" test $? = 2
tap_exit
