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
	[[ -z ${recdir:-} ]] || pkill -KILL -f "[-]-dir ${recdir}$" 2>/dev/null
	[[ -n ${KEEP:-} ]] || rm -rf "$work" "${recdir:-}"
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
# Init may take a while to listen under ASan on a loaded machine: wait for
# any answer, then look at it.  flapper never becomes ready, so it is 503.
# shellcheck disable=SC2317  # called by wait_for
health_code() { [[ $(curl -s -m 2 -o "$work/health0" -w '%{http_code}' "http://127.0.0.1:$port/health") != 000 ]]; }
wait_for 20 health_code
check "health answers 503 until every service is ready, with each state" \
	bash -c "curl -s -m 2 -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health | grep -q 503 &&
		jq -e '[.services[] | .state | strings] | length == 4' '$work/health0' >/dev/null"
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

# Ports init holds ("listen"): a real server (cloche-rec, as nobody) gets
# the port as fd 3 and never binds it; while it is down the port stays
# init's (another process cannot bind it, a connection waits in the queue
# and is answered by the next run); the http probe waits for an answer,
# not a connect.
hport=$(free_port)
hport2=$(free_port)
# nobody's directory is outside TMPDIR, which make test makes 0700.
recdir=$(mktemp -d /tmp/cloche-init-rec.XXXXXX)
chmod 0755 "$recdir" && chown nobody "$recdir"
cat >"$work/held.json" <<JSON
{
  "services": [
    {"name": "rec", "user": "nobody", "listen": [$hport, $hport2],
     "env": {"CLOCHE_REC_SECRET": "abcdefghijklmnopqrstuvwxyz0123"},
     "argv": ["$PWD/${BUILD:-build}/bin/cloche-rec", "--port", "$hport", "--dir", "$recdir",
              "--display", ":99"],
     "ready": {"http": $hport}}
  ]
}
JSON
port=$(free_port)
"$bin" --services "$work/held.json" --health-port "$port" --health-listen 127.0.0.1 >"$work/held.log" 2>&1 &
pid=$!
check "a server on a port init holds becomes ready by its http answer" \
	wait_health 30 '.services.rec.state == "ready"' ||
	sed 's/^/# held.log: /' "$work/held.log" | cut -c1-400
rec_pid=$(field .services.rec.pid)
check "it runs as its user with that user's groups (uid $(awk '/^Uid/ {print $2}' "/proc/$rec_pid/status"))" \
	bash -c "grep -q '^Uid:[[:space:]]*65534' /proc/$rec_pid/status && grep -q '^Groups:[[:space:]]*65534[[:space:]]*$' /proc/$rec_pid/status"
check "it answers on the held port, fd 3 from init (HTTP $(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/"))" \
	bash -c "[[ \$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:$hport/) =~ ^[2-4] ]] && \
		[[ \$(readlink /proc/$rec_pid/fd/3) == socket:* ]]"
# The port must stay held through the death and the backoff before the next run.
kill -KILL "$rec_pid"
binds=0
for _ in $(seq 20); do
	python3 -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', $hport)); s.listen()" 2>/dev/null && binds=$((binds + 1))
	python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', $hport2)); s.listen()" 2>/dev/null && binds=$((binds + 1))
done
check "while it is down nobody else can bind either port (binds that worked: $binds of 40)" test "$binds" = 0
code=$(curl -s -o /dev/null -m 10 -w '%{http_code}' "http://127.0.0.1:$hport/")
check "a request made while it was down is answered by its next run (HTTP $code)" bash -c "[[ $code =~ ^[2-4] ]]"
check "the next run is ready again" wait_health 30 ".services.rec.pid != $rec_pid and .services.rec.state == \"ready\""
kill -TERM "$pid"
wait "$pid"
pid=
printf '{"services":[{"name":"a","argv":["/bin/true"],"listen":[%s]},{"name":"b","argv":["/bin/true"],"listen":[%s]}]}' \
	"$hport" "$hport" >"$work/twice.json"
out=$("$bin" --services "$work/twice.json" --health-port 0 2>&1)
check "a port held for two services is a bad table" grep -q "port $hport is in listen twice" <<<"$out"

printf '{"services":[{"name":"a","argv":["/bin/true"],"after":["b"]}]}' >"$work/bad.json"
out=$("$bin" --services "$work/bad.json" --health-port 0 2>&1)
rc=$?
check "a bad table exits 1 naming the problem" bash -c "[[ $rc == 1 ]] && grep -q 'depends on unknown service .b.' <<<'$out'"
"$bin" --no-such-flag >/dev/null 2>&1
check "an unknown flag exits 2" test $? = 2
tap_exit
