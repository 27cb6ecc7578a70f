#!/usr/bin/env bash
# cloche-node against real runsc, btrfs and netns: on a pool directory that
# is not btrfs it makes and mounts a loop image; the API refuses requests
# without the node credential; a create answers when the sandbox's health is
# 200, with its limits in the host cgroups and inside; destroy leaves no
# subvolume, netns, runsc process or directory; bad input gets 4xx JSON
# errors; 10 parallel creates all become ready; during and after kill -9 of
# the agent the sandboxes keep serving VNC and MCP, a restart re-adopts them,
# cleans up a half-made one and leaves another pool's netns alone; SIGTERM
# stops the agent and leaves sandboxes running.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh


template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
pre="${CLOCHE_TEST_PREFIX:-t}-node-$$"
PAR=${NODE_TEST_PARALLEL:-10}
node_setup "$pre"
work=$NODE_WORK
img_pool="$work/img-pool"

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	mountpoint -q "$img_pool" && umount "$img_pool"
	node_cleanup
}
trap cleanup EXIT

[[ -x $NODE_BIN ]] || { not_ok "$NODE_BIN is built (make all)"; tap_exit; }
[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; tap_exit; }
tname=$(basename "$template")

# RFB banner and an MCP initialize answer from sandbox $1, through its router netns.
serves_vnc_and_mcp() {
	local banner code
	banner=$(nsenter --net="/var/run/netns/R-$1" timeout 5 bash -c \
		'exec 3<>/dev/tcp/10.0.2.15/5900 && head -c 12 <&3' 2>/dev/null)
	code=$(nsenter --net="/var/run/netns/R-$1" curl -s -m 5 -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		--data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
		http://10.0.2.15:8889/mcp 2>/dev/null)
	[[ $banner == "RFB 003.008"* && $code == 200 ]] || { echo "# $1: rfb='$banner' mcp=$code" >&2; return 1; }
}

# A pool that is not on btrfs: the agent makes and mounts a loop image; one
# agent per pool; templates arrive as btrfs send streams.
mkdir -p "$img_pool"
img_port=$(free_port)
"$NODE_BIN" --port "$img_port" --credential-file "$work/cred" --pool "$img_pool" --pool-image "$work/pool.img" \
	--pool-image-size 2 --runsc-root "$work/runsc" --connect-socket "$work/img.sock" >"$work/img-node.log" 2>&1 &
img_pid=$!
wait_for 10 grep -q '"serving"' "$work/img-node.log"
pool_made() {
	[[ "$(stat -f -c %T "$img_pool")" == btrfs && -d $img_pool/templates && -d $img_pool/sandboxes &&
		-d $img_pool/checkpoints && -f $work/pool.img ]] &&
		(($(stat -c %s "$work/pool.img") == 2 << 30)) && grep -q '"pool image created"' "$work/img-node.log"
}
check "on first start the agent creates, formats and mounts a btrfs pool image" pool_made
"$NODE_BIN" --port 0 --credential-file "$work/cred" --pool "$img_pool" --runsc-root "$work/runsc" \
	--connect-socket "$work/img2.sock" >"$work/img-second.log" 2>&1
check "a second agent on the same pool refuses to start" grep -q "another cloche-node (pid $img_pid)" "$work/img-second.log"

# Importing a template from a btrfs send stream (made here from a tiny
# read-only subvolume).
img_api() { NODE_BASE="http://127.0.0.1:$img_port" api "$@"; }
mkdir -p "$img_pool/src"
btrfs -q subvolume create "$img_pool/src/tiny@0123abcd" >/dev/null
echo hello >"$img_pool/src/tiny@0123abcd/file"
btrfs -q property set -ts "$img_pool/src/tiny@0123abcd" ro true
btrfs -q send -f "$work/tiny.stream" "$img_pool/src/tiny@0123abcd" 2>/dev/null
btrfs -q subvolume delete "$img_pool/src/tiny@0123abcd" >/dev/null
rmdir "$img_pool/src"
r=$(img_api POST /v1/templates "{\"import\":\"$work/tiny.stream\"}")
check "POST /v1/templates imports a send stream: 201 with its name" \
	test "$(status_of "$r")" = 201 -a "$(body_of "$r" | jq -r .template)" = "tiny@0123abcd"
imported_ok() {
	[[ "$(cat "$img_pool/templates/tiny@0123abcd/file")" == hello ]] &&
		btrfs property get -ts "$img_pool/templates/tiny@0123abcd" ro | grep -q true
}
check "the imported template is there, read-only, with its files" imported_ok
r=$(img_api GET /v1/templates)
check "GET /v1/templates lists it with name and digest" \
	test "$(body_of "$r" | jq -r '.templates[] | select(.template == "tiny@0123abcd") | .name + " " + .digest')" = "tiny 0123abcd"
r=$(img_api POST /v1/templates "{\"import\":\"$work/tiny.stream\"}")
check "importing it again: 409" test "$(status_of "$r")" = 409
head -c 4096 /dev/urandom >"$work/junk.stream"
r=$(img_api POST /v1/templates "{\"import\":\"$work/junk.stream\"}")
check "a file that is not a send stream: 400" test "$(status_of "$r")" = 400
r=$(img_api POST /v1/templates '{"import":"relative/path"}')
check "a relative path: 400" test "$(status_of "$r")" = 400
r=$(img_api POST /v1/templates '{"file":1}')
check "a body without import: 400 with a JSON error" test "$(body_of "$r" | jq -r .error.code)" = bad_request
check "failed imports leave nothing in templates/" \
	test "$(ls -A "$img_pool/templates")" = "tiny@0123abcd"
kill -TERM "$img_pid"; wait "$img_pid"
umount "$img_pool"
"$NODE_BIN" --port 0 --credential-file "$work/cred" --pool "$img_pool" --pool-image "$work/pool.img" \
	--pool-image-size 2 --runsc-root "$work/runsc" --connect-socket "$work/img.sock" >"$work/img-node2.log" 2>&1 &
img_pid=$!
wait_for 10 grep -q '"serving"' "$work/img-node2.log"
check "the next start mounts the existing image again" \
	bash -c "[[ \$(stat -f -c %T '$img_pool') == btrfs ]] && ! grep -q 'pool image created' '$work/img-node2.log'"
kill -TERM "$img_pid"; wait "$img_pid"
umount "$img_pool"
touch "$img_pool/precious"
"$NODE_BIN" --port 0 --credential-file "$work/cred" --pool "$img_pool" --pool-image "$work/pool.img" \
	--runsc-root "$work/runsc" --connect-socket "$work/img.sock" >"$work/img-node3.log" 2>&1
rc=$?
check "a non-empty, non-btrfs pool directory is refused (exit $rc), not hidden by a mount" \
	bash -c "[[ $rc != 0 && -e '$img_pool/precious' ]] && grep -q 'not empty' '$work/img-node3.log'"

start_node() { node_start "$@"; }
check "cloche-node starts and answers /healthz" start_node

r=$(curl -s -o "$work/b" -w '%{http_code}' "$NODE_BASE/v1/sandboxes")
check "no credential: 401 with a JSON error" test "$r" = 401 -a "$(jq -r .error.code "$work/b")" = unauthorized
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer nope-$NODE_CRED" "$NODE_BASE/v1/sandboxes")
check "wrong credential: 401" test "$r" = 401

# One sandbox through its whole life.
id="$pre-a"
t0=$(now_ms)
r=$(api POST /v1/sandboxes "{\"id\":\"$id\",\"template\":\"$tname\",\"memory_mb\":1024,\"cpus\":1,\"pids\":2048}")
echo "# create: $r"
one_ms=$(($(now_ms) - t0))
echo "# create to ready: $one_ms ms"
# As many parallel creates as the machine boots within the agent's 180 s
# ready timeout with room to spare.  A boot is CPU-bound and boots at once
# slow each other more than their sum (measured: 8 at once, one taking 21 s
# alone, took 124-130 s each and half missed the 180 s), so: 10 where a boot
# takes 5 s; 3 where it takes 20-30 s, which says nothing about the agent.
# Never fewer than 3.
if [[ -z ${NODE_TEST_PARALLEL:-} ]]; then
	fit=$((30000 * $(nproc) / (one_ms > 1 ? one_ms : 1)))
	((fit < PAR)) && PAR=$((fit < 3 ? 3 : fit))
	echo "# parallel creates: $PAR (one boot took $one_ms ms, $(nproc) cores)"
fi
check "create answers 201 with state ready" test "$(status_of "$r")" = 201 -a "$(body_of "$r" | jq -r .state)" = ready
r=$(api GET "/v1/sandboxes/$id")
check "GET shows it ready" test "$(status_of "$r")" = 200 -a "$(body_of "$r" | jq -r .state)" = ready
listed() {
	local r
	r=$(api GET /v1/sandboxes)
	[[ $(status_of "$r") == 200 ]] &&
		body_of "$r" | jq -e --arg id "$1" '.sandboxes[] | select(.id == $id)' >/dev/null
}
check "GET /v1/sandboxes lists it" listed "$id"
check "its health answers 200 from its router netns" test "$(sb_health_code "$id")" = 200

# The port-connect path (what cloche-proxy uses): a socket into the sandbox,
# handed over a unix socket.
out=$(printf 'GET /health HTTP/1.0\r\nHost: sandbox\r\n\r\n' | node_connect "$id" 8080)
check "port-connect: an HTTP request through it reaches the sandbox's health" \
	grep -q "^HTTP/1.[01] 200" <<<"$out"
out=$(sleep 1 | node_connect "$id" 5900 | head -c 12)
check "port-connect: VNC answers with its RFB banner" test "$out" = "RFB 003.008"
out=$(node_connect "$pre-never" 8080 </dev/null 2>&1)
rc=$?
check "port-connect to an unknown sandbox: exit 1, says 404-like no such sandbox" \
	bash -c "[[ $rc == 1 ]] && grep -q 'no such sandbox' <<<'$out'"
out=$(node_connect "$id" 9 </dev/null 2>&1)
rc=$?
check "port-connect to a closed port: exit 1 with the connect error" \
	bash -c "[[ $rc == 1 ]] && grep -qi 'refused' <<<'$out'"
out=$(timeout 10 runuser -u nobody -- "$NODE_BIN" --connect-socket "$NODE_WORK/node.sock" connect "$id" 8080 </dev/null 2>&1)
rc=$?
check "port-connect is refused to a non-root user" bash -c "[[ $rc != 0 ]]"
check "the connect socket is mode 0600" test "$(stat -c %a "$NODE_WORK/node.sock")" = 600
check "the rootfs is a btrfs snapshot" quiet btrfs subvolume show "$CLOCHE_POOL/sandboxes/$id/rootfs"
check "meta.json is there" quiet jq -e ".id == \"$id\"" "$CLOCHE_POOL/sandboxes/$id/meta.json"
# 1024 MiB for the sandbox plus the reserve for gVisor (192 + 1024/8 MiB).
check "limits reach the container's cgroup (memory 1 GiB + reserve, pids 8 x 2048 + 1024)" \
	test "$(cat /sys/fs/cgroup/memory/"$id"/memory.limit_in_bytes 2>/dev/null)" = $(((1024 + 320) << 20)) \
	-a "$(cat /sys/fs/cgroup/pids/"$id"/pids.max 2>/dev/null)" = $((8 * 2048 + 1024))
guest_limits() {
	local out
	out=$(mcp_call "$id" 8889 run_command '{"command":"grep MemTotal /proc/meminfo; echo nproc=$(ulimit -u)"}' 2>&1)
	grep -q "MemTotal: *$(((1024 + 320) * 1024)) kB" <<<"$out" && grep -q "nproc=2048" <<<"$out" ||
		{ echo "# $out" >&2; return 1; }
}
check "inside: MemTotal is the limit plus reserve, the agent user's process limit is pids" guest_limits
r=$(api GET /v1/capacity)
capacity_ok() {
	[[ $(status_of "$1") == 200 ]] &&
		jq -e '.memory.total > 0 and .memory.available > 0 and .cpus > 0 and .disk.free > 0 and .running >= 1' \
			<<<"$(body_of "$1")" >/dev/null
}
check "capacity reports memory, cpus, disk and a running sandbox" capacity_ok "$r"

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
r=$(api POST /v1/sandboxes "{\"id\":\"${id}x\"}")
check "an id that extends an existing one (runsc would find both): 409 saying why" \
	test "$(status_of "$r")" = 409 -a "$(body_of "$r" | jq -r .error.message | grep -c ambiguous)" = 1
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

# A half-made sandbox (no meta.json) for the restart to clean up, and a
# netns pair with no directory in this pool (another pool's, or made by
# hand) that it must leave alone.
half="$pre-half"
mkdir -p "$CLOCHE_POOL/sandboxes/$half"
btrfs -q subvolume snapshot "$template" "$CLOCHE_POOL/sandboxes/$half/rootfs" >/dev/null
ip netns add "S-$half"
ip netns add "R-$half"
ip netns add "S-$pre-foreign"
ip netns add "R-$pre-foreign"

# kill -9 of the agent: the sandboxes keep running and are re-adopted.
kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null
node_pid=
check "sandboxes keep serving health while the agent is down" test "$(sb_health_code "$pre-p0")" = 200
down_serving=0
for ((i = 0; i < PAR; i++)); do serves_vnc_and_mcp "$pre-p$i" && ((down_serving++)); done
check "all $PAR keep serving VNC (RFB) and MCP while the agent is down ($down_serving)" test "$down_serving" = "$PAR"
check "cloche-node restarts after kill -9" start_node
r=$(api GET /v1/sandboxes)
n=$(body_of "$r" | jq "[.sandboxes[] | select((.id | startswith(\"$pre-p\")) and .state == \"ready\")] | length")
check "after restart GET lists all $PAR sandboxes as ready ($n)" test "$n" = "$PAR"
check "a re-adopted sandbox still answers health" test "$(sb_health_code "$pre-p1")" = 200
check "the half-made sandbox was cleaned up at start" gone "$half"
check "a netns pair that is not this pool's was left alone" \
	test -e "/var/run/netns/S-$pre-foreign" -a -e "/var/run/netns/R-$pre-foreign"
ip netns del "S-$pre-foreign"
ip netns del "R-$pre-foreign"
up_serving=0
for ((i = 0; i < PAR; i++)); do serves_vnc_and_mcp "$pre-p$i" && ((up_serving++)); done
check "after the restart all $PAR still serve VNC and MCP ($up_serving)" test "$up_serving" = "$PAR"

# SIGTERM: the agent exits cleanly and leaves sandboxes running.
kill -TERM "$node_pid"
wait_for 5 exited "$node_pid"
check "SIGTERM stops cloche-node" exited "$node_pid"
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
check "every log line is JSON" node_log_is_json
node_stop
tap_exit
