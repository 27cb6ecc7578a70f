#!/usr/bin/env bash
# cloche-node against real runsc, btrfs and netns: the API refuses requests
# without the node credential; a create answers when the sandbox's health is
# 200; destroy leaves no subvolume, netns, runsc process or directory; bad
# input gets 4xx JSON errors; parallel creates all become ready; after
# kill -9 of the agent a restart re-adopts the running sandboxes and cleans
# up a half-made one; SIGTERM stops the agent and leaves sandboxes running.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. scripts/lib/sandbox.sh

bin=${CLOCHE_BUILD:-build}/bin/cloche-node
template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
pre="t-node-$$"
work=$(mktemp -d)
port=$(free_port)
base="http://127.0.0.1:$port"
node_pid=
PAR=${NODE_TEST_PARALLEL:-4}

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[[ -n $node_pid ]] && kill -9 "$node_pid" 2>/dev/null
	local d id
	for d in "$CLOCHE_POOL"/sandboxes/"$pre"-*; do
		[[ -e $d ]] || continue
		id=$(basename "$d")
		sb_down "$id" >/dev/null 2>&1
	done
	for d in /var/run/netns/[SR]-"$pre"-*; do
		[[ -e $d ]] && ip netns del "$(basename "$d")" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

[[ -x $bin ]] || { not_ok "$bin is built (make all)"; tap_exit; }
[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; tap_exit; }
tname=$(basename "$template")
head -c 32 /dev/urandom | base64 >"$work/cred"
cred=$(cat "$work/cred")

start_node() {
	"$bin" --port "$port" --credential-file "$work/cred" --pool "$CLOCHE_POOL" \
		--runsc-root "$CLOCHE_RUNSC_ROOT" >>"$work/node.log" 2>&1 &
	node_pid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		curl -sf "$base/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# api METHOD PATH [BODY]: prints "<status> <body>".
api() {
	local out
	out=$(curl -s -m 200 -o "$work/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $cred" \
		${3:+-H 'Content-Type: application/json' --data-binary "$3"} "$base$2") || out=000
	printf '%s %s\n' "$out" "$(cat "$work/body" 2>/dev/null)"
}

status_of() { cut -d' ' -f1 <<<"$1"; }
body_of() { cut -d' ' -f2- <<<"$1"; }

sb_health_code() {
	nsenter --net="/var/run/netns/R-$1" curl -s -o /dev/null -w '%{http_code}' -m 3 \
		"http://10.0.2.15:8080/health" 2>/dev/null || true
}

# Nothing of sandbox $1 is left on the node.
gone() {
	local id=$1
	[[ ! -e $CLOCHE_POOL/sandboxes/$id ]] || { echo "# dir left: $id" >&2; return 1; }
	[[ ! -e /var/run/netns/S-$id && ! -e /var/run/netns/R-$id ]] || { echo "# netns left: $id" >&2; return 1; }
	! pgrep -f "runsc.*$id" >/dev/null || { echo "# runsc left: $id" >&2; return 1; }
	! btrfs subvolume list "$CLOCHE_POOL" | grep -q "sandboxes/$id/" || { echo "# subvolume left: $id" >&2; return 1; }
}

check "cloche-node starts and answers /healthz" start_node

r=$(curl -s -o "$work/b" -w '%{http_code}' "$base/v1/sandboxes")
check "no credential: 401 with a JSON error" test "$r" = 401 -a "$(jq -r .error.code "$work/b")" = unauthorized
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer nope-$cred" "$base/v1/sandboxes")
check "wrong credential: 401" test "$r" = 401

# One sandbox through its whole life.
id="$pre-a"
t0=$(now_ms)
r=$(api POST /v1/sandboxes "{\"id\":\"$id\",\"template\":\"$tname\",\"memory_mb\":1024,\"cpus\":1,\"pids\":2048}")
echo "# create: $r"
echo "# create to ready: $(($(now_ms) - t0)) ms"
check "create answers 201 with state ready" test "$(status_of "$r")" = 201 -a "$(body_of "$r" | jq -r .state)" = ready
r=$(api GET "/v1/sandboxes/$id")
check "GET shows it ready" test "$(status_of "$r")" = 200 -a "$(body_of "$r" | jq -r .state)" = ready
listed() { body_of "$(api GET /v1/sandboxes)" | jq -e --arg id "$1" '.sandboxes[] | select(.id == $id)' >/dev/null; }
check "GET /v1/sandboxes lists it" listed "$id"
check "its health answers 200 from its router netns" test "$(sb_health_code "$id")" = 200
quiet() { "$@" >/dev/null 2>&1; }
check "the rootfs is a btrfs snapshot" quiet btrfs subvolume show "$CLOCHE_POOL/sandboxes/$id/rootfs"
check "meta.json is there" quiet jq -e ".id == \"$id\"" "$CLOCHE_POOL/sandboxes/$id/meta.json"
check "limits reach the container's cgroup (memory 1 GiB)" \
	test "$(cat /sys/fs/cgroup/memory/"$id"/memory.limit_in_bytes 2>/dev/null)" = $((1024 << 20))
r=$(api GET /v1/capacity)
capacity_ok() { jq -e '.memory.total > 0 and .memory.available > 0 and .cpus > 0 and .disk.free > 0 and .running >= 1' <<<"$1" >/dev/null; }
check "capacity reports memory, cpus, disk and a running sandbox" capacity_ok "$(body_of "$r")"

# Bad input.
r=$(api POST /v1/sandboxes '{"id": "x",')
check "bad JSON: 400 with a JSON error" test "$(status_of "$r")" = 400 -a "$(body_of "$r" | jq -r .error.code)" = bad_request
r=$(api POST /v1/sandboxes '{"template":"no-such-template"}')
check "unknown template: 404 with a JSON error" test "$(status_of "$r")" = 404 -a "$(body_of "$r" | jq -r .error.code)" = not_found
r=$(api POST /v1/sandboxes '{"id":"Bad/Id"}')
check "invalid id: 400" test "$(status_of "$r")" = 400
r=$(api POST /v1/sandboxes '{"memory_mb":"lots"}')
check "memory_mb of the wrong type: 400" test "$(status_of "$r")" = 400
r=$(api POST /v1/sandboxes "{\"id\":\"$id\"}")
check "an id in use: 409" test "$(status_of "$r")" = 409
r=$(api GET "/v1/sandboxes/$pre-never")
check "GET of an unknown id: 404" test "$(status_of "$r")" = 404

t0=$(now_ms)
r=$(api DELETE "/v1/sandboxes/$id")
check "DELETE answers 200 ($(($(now_ms) - t0)) ms)" test "$(status_of "$r")" = 200
check "destroy leaves no subvolume, netns, runsc process or directory" gone "$id"
r=$(api DELETE "/v1/sandboxes/$id")
check "DELETE again: 404" test "$(status_of "$r")" = 404

# Parallel creates (wait on the curls only: the agent is a child too).
t0=$(now_ms)
pids=()
for ((i = 0; i < PAR; i++)); do
	api POST /v1/sandboxes "{\"id\":\"$pre-p$i\",\"template\":\"$tname\",\"memory_mb\":1024}" >"$work/par$i" &
	pids+=($!)
done
wait "${pids[@]}"
echo "# $PAR parallel creates to ready: $(($(now_ms) - t0)) ms"
n=0
for ((i = 0; i < PAR; i++)); do
	[[ $(status_of "$(cat "$work/par$i")") == 201 ]] && ((n++))
	echo "# $pre-p$i: $(jq -c '{state, boot_ms}' <<<"$(body_of "$(cat "$work/par$i")")" 2>/dev/null)"
done
check "$PAR parallel creates all become ready ($n)" test "$n" = "$PAR"

# A half-made sandbox (no meta.json) for the restart to clean up.
half="$pre-half"
mkdir -p "$CLOCHE_POOL/sandboxes/$half"
btrfs -q subvolume snapshot "$template" "$CLOCHE_POOL/sandboxes/$half/rootfs" >/dev/null
ip netns add "S-$half"

# kill -9 of the agent: the sandboxes keep running and are re-adopted.
kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null
node_pid=
check "sandboxes keep serving while the agent is down" test "$(sb_health_code "$pre-p0")" = 200
check "cloche-node restarts after kill -9" start_node
r=$(api GET /v1/sandboxes)
n=$(body_of "$r" | jq "[.sandboxes[] | select((.id | startswith(\"$pre-p\")) and .state == \"ready\")] | length")
check "after restart GET lists all $PAR sandboxes as ready ($n)" test "$n" = "$PAR"
check "a re-adopted sandbox still answers health" test "$(sb_health_code "$pre-p1")" = 200
check "the half-made sandbox was cleaned up at start" gone "$half"

# SIGTERM: the agent exits cleanly and leaves sandboxes running.
kill -TERM "$node_pid"
for ((i = 0; i < 50; i++)); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM stops cloche-node" bash -c "! kill -0 $node_pid 2>/dev/null"
wait "$node_pid" 2>/dev/null
check "it exited 0" test $? = 0
node_pid=
check "the sandboxes survive SIGTERM" test "$(sb_health_code "$pre-p0")" = 200
check "cloche-node restarts after SIGTERM" start_node
r=$(api GET "/v1/sandboxes/$pre-p0")
check "and re-adopts them" test "$(body_of "$r" | jq -r .state)" = ready

# Destroy everything, in parallel.
pids=()
for ((i = 0; i < PAR; i++)); do
	api DELETE "/v1/sandboxes/$pre-p$i" >"$work/del$i" &
	pids+=($!)
done
wait "${pids[@]}"
n=0
for ((i = 0; i < PAR; i++)); do
	[[ $(status_of "$(cat "$work/del$i")") == 200 ]] && gone "$pre-p$i" && ((n++))
done
check "destroying all $PAR leaves nothing behind ($n)" test "$n" = "$PAR"
r=$(api GET /v1/sandboxes)
check "the list is empty" test "$(body_of "$r" | jq '.sandboxes | length')" = 0
if grep -v '^{' "$work/node.log" | grep -q .; then
	not_ok "every log line is JSON"
	grep -v '^{' "$work/node.log" | head -5 | sed 's/^/# /'
else
	ok "every log line is JSON"
fi
kill -TERM "$node_pid" 2>/dev/null
wait "$node_pid" 2>/dev/null
node_pid=
tap_exit
