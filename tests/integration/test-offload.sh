#!/usr/bin/env bash
# L2: a hibernated sandbox offloaded to an S3 API server (s3rver) and
# restored on a second node agent with its own pool, which has never seen
# the template (it fetches it from S3): the file and the page are intact.
# The objects are inspected with awscli.  Faults: S3 unreachable during an
# offload (local copy kept, hibernated; the retry succeeds), kill -9 of the
# agent during an upload (no manifest in S3, so that generation is never
# used; after the restart the sandbox is hibernated and offloads again), a
# corrupted object (the restore fails with a clear error and leaves nothing
# on that node), a forged or unsealed manifest (refused before anything is
# fetched), and the deletion of an offloaded sandbox's objects.  The
# manifests are sealed and hold no secret; a sandbox restored from S3 gets
# new secrets.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh
. tests/lib/s3.sh

pre="${CLOCHE_TEST_PREFIX:-t}-l2-$$"
node_setup "$pre"
work=$NODE_WORK
s3_port=$(free_port) S3RVER_PID=
A=$pre-a
# The second agent: its own pool (a directory of the btrfs pool), runsc
# root, port and socket.
POOL2=$CLOCHE_POOL/pools/$pre-n2
ROOT2=/run/cloche/$pre-n2
PORT2=$(free_port)
n2_pid=

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local id
	if [[ -n $n2_pid ]] || n2_start >/dev/null 2>&1; then
		for id in $(api2 GET /v1/sandboxes | body_of_stdin | jq -r '.sandboxes[].id' 2>/dev/null); do
			api2 DELETE "/v1/sandboxes/$id" >/dev/null
		done
		kill "$n2_pid" 2>/dev/null
		wait "$n2_pid" 2>/dev/null
	fi
	[[ -z $S3RVER_PID ]] || kill "$S3RVER_PID" 2>/dev/null
	node_cleanup
	for t in "$POOL2"/templates/*; do [[ -e $t ]] && btrfs -q subvolume delete "$t" >/dev/null 2>&1; done
	rm -rf "$POOL2" "$ROOT2"
}
trap cleanup EXIT
node_preflight
[[ -x $S3RVER ]] || { not_ok "s3rver is installed (scripts/install-deps.sh)"; tap_exit; }

s3_start() { s3rver_start "$work/s3" "$s3_port" ckpt "$work/s3rver.log"; }
check "s3rver serves" s3_start
export CLOCHE_S3_ACCESS_KEY=S3RVER CLOCHE_S3_SECRET_KEY=S3RVER CLOCHE_S3_ATTEMPTS=2
# The key both nodes seal their manifests with (docs/s3.md); the bucket
# (s3rver, awscli) never sees it.
CLOCHE_S3_SEAL_KEY=$(head -c 32 /dev/urandom | base64)
export CLOCHE_S3_SEAL_KEY
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
export AWS_PAGER='' AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
AWS=${AWS:-/usr/bin/aws} # Debian's awscli (a pyenv shim may come first on PATH)
aws3() { "$AWS" --endpoint-url "http://127.0.0.1:$s3_port" s3api "$@"; }
S3OPTS=(--s3-endpoint "http://127.0.0.1:$s3_port" --s3-bucket ckpt --s3-prefix "$pre/")

n2_start() { # extra options...
	mkdir -p "$POOL2"
	"$NODE_BIN" --port "$PORT2" --credential-file "$work/cred" --pool "$POOL2" \
		--runsc-root "$ROOT2" --connect-socket "$work/node2.sock" "${S3OPTS[@]}" "$@" \
		>>"$work/node2.log" 2>&1 &
	n2_pid=$!
	wait_for 10 quiet curl -sf "http://127.0.0.1:$PORT2/healthz"
}
api2() { # METHOD PATH [BODY]: as api, against the second agent
	local saved=$NODE_BASE out
	NODE_BASE=http://127.0.0.1:$PORT2
	out=$(api "$@")
	NODE_BASE=$saved
	printf '%s\n' "$out"
}
body_of_stdin() { cut -d' ' -f2-; }
shell() {
	mcp_call "$1" 8889 run_command "$(jq -cn --arg c "$2" '{command:$c}')" |
		sed -e '/^\[exit code: [0-9]*\]$/d' -e '/^$/d'
}
page_state() {
	mcp_call "$1" 7999 browser_evaluate \
		'{"function":"() => document.title + \"|\" + document.querySelector(\"#q\").value"}' |
		jq -r .
}

check "node 1 starts with S3" node_start "${S3OPTS[@]}"
check "node 2 starts with S3, its own pool and no template" n2_start
check "node 2 has no template" test "$(body_of "$(api2 GET /v1/templates)" | jq '.templates | length')" = 0

r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
check "sandbox $A is made on node 1" test "$(status_of "$r")" = 201
mcp_call "$A" 8889 write_file '{"path":"note.txt","content":"kept through S3"}' >/dev/null
mcp_call "$A" 8889 write_file '{"path":"form.html","content":"<title>Far page</title><input id=q>"}' >/dev/null
mcp_call "$A" 7999 browser_navigate '{"url":"file:///home/agent/form.html"}' >/dev/null
mcp_call "$A" 7999 browser_evaluate \
	'{"function":"() => { document.querySelector(\"#q\").value = \"typed far\"; return 1 }"}' >/dev/null
check "its file and page are set" \
	test "$(shell "$A" "cat note.txt")|$(page_state "$A")" = "kept through S3|Far page|typed far"

vnc1=$(sb_vnc_secret "$A")
rec1=$(jq -r .desktop.rec_secret "$(sb_dir "$A")/meta.json")
r=$(api POST "/v1/sandboxes/$A/hibernate")
check "it hibernates on node 1" test "$(status_of "$r")" = 200

# --- S3 unreachable during the offload
kill "$S3RVER_PID"
wait "$S3RVER_PID" 2>/dev/null
S3RVER_PID=
t0=$(now_ms)
r=$(api POST "/v1/sandboxes/$A/offload")
check "offload with S3 down: 503 within bounded time ($(($(now_ms) - t0)) ms)" \
	test "$(status_of "$r")" = 503
echo "# $(body_of "$r" | jq -r .error.message)"
check "... the local copy is kept, hibernated" \
	eval "[[ '$(body_of "$(api GET "/v1/sandboxes/$A")" | jq -r .state)' == hibernated && -e $CLOCHE_POOL/checkpoints/$A/1/manifest.json ]]"
s3_start

# --- kill -9 during the upload: no manifest, so nothing whole in S3
node_stop
node_start "${S3OPTS[@]}" --test-hooks upload=8000
api POST "/v1/sandboxes/$A/offload" >/dev/null &
wait_for 60 grep -q '"point":"upload"' "$work/node.log"
kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null
node_pid=
prefix="$pre/sandboxes/$A/1/"
check "killed during the upload: objects but no manifest in S3" \
	eval "aws3 list-objects-v2 --bucket ckpt --prefix '$prefix' --query 'Contents[].Key' --output text | grep -q rootfs.send.zst && ! aws3 head-object --bucket ckpt --key '${prefix}manifest.json' >/dev/null 2>&1"
r=$(api2 POST "/v1/sandboxes/$A/restore" "{\"l2\":{\"prefix\":\"$prefix\",\"generation\":1}}")
check "a restore of that unfinished generation: 404, nothing left on node 2" \
	eval "[[ '$(status_of "$r")' == 404 ]] && [[ ! -e $POOL2/sandboxes/$A && ! -e $POOL2/checkpoints/$A ]]"
node_start "${S3OPTS[@]}"
check "after the restart the sandbox is hibernated on node 1" \
	test "$(body_of "$(api GET "/v1/sandboxes/$A")" | jq -r .state)" = hibernated

# --- the offload
r=$(api POST "/v1/sandboxes/$A/offload")
check "offload: 200 with its place in S3" \
	test "$(status_of "$r") $(body_of "$r" | jq -r .l2.prefix)" = "200 $prefix"
echo "# offload: $(body_of "$r" | jq -c .l2)"
check "node 1 no longer has it (no directory, no checkpoint, not listed)" \
	eval "[[ ! -e $CLOCHE_POOL/sandboxes/$A && ! -e $CLOCHE_POOL/checkpoints/$A ]] && [[ '$(status_of "$(api GET "/v1/sandboxes/$A")")' == 404 ]]"
keys=$(aws3 list-objects-v2 --bucket ckpt --prefix "$pre/" --query 'Contents[].Key' --output text | tr '\t' '\n')
check "awscli sees the manifest, the rootfs delta and the state image" \
	eval "grep -qx '${prefix}manifest.json' <<<'$keys' && grep -qx '${prefix}rootfs.send.zst' <<<'$keys' && grep -qx '${prefix}state/checkpoint.img.zst' <<<'$keys'"
check "awscli sees the template's full stream and manifest" \
	eval "grep -q '^$pre/templates/desktop@.*/stream.zst$' <<<'$keys' && grep -q '^$pre/templates/desktop@.*/manifest.json$' <<<'$keys'"
aws3 get-object --bucket ckpt --key "${prefix}manifest.json" "$work/manifest.sealed" >/dev/null
check "the manifest ends in its seal (HMAC-SHA256 with the nodes' key)" \
	grep -qE '^#cloche-seal v1 hmac-sha256=[0-9a-f]{64}$' "$work/manifest.sealed"
grep -v '^#cloche-seal ' "$work/manifest.sealed" >"$work/manifest.json"
check "... and holds neither the VNC nor the recorder secret, in any form" \
	bash -c "[[ -n '$vnc1' && -n '$rec1' ]] && ! grep -qF -e '$vnc1' -e '$rec1' '$work/manifest.sealed' && \
		jq -e 'has(\"vnc_secret\") == false and has(\"secrets\") == false and (.sealed_secrets | length) > 40' '$work/manifest.json' >/dev/null"
check "the manifest names each object with its size and sha256" \
	test "$(jq '[.objects[] | select((.sha256 | length) == 64 and .bytes > 0)] | length' "$work/manifest.json")" = \
	"$(jq '.objects | length' "$work/manifest.json")"
aws3 get-object --bucket ckpt --key "${prefix}rootfs.send.zst" "$work/rootfs.zst" >/dev/null
check "the rootfs delta holds the file written inside (btrfs receive --dump)" \
	eval "zstd -q -d -c '$work/rootfs.zst' | btrfs receive --dump 2>/dev/null | grep -q 'home/agent/note.txt'"
rootfs_kb=$(($(aws3 head-object --bucket ckpt --key "${prefix}rootfs.send.zst" --query ContentLength --output text) / 1024))
echo "# objects: $(jq -c '[.objects[] | {name, bytes}]' "$work/manifest.json"); rootfs delta $rootfs_kb KiB"

# --- restore on node 2
r=$(api2 POST "/v1/sandboxes/$A/restore" "{\"l2\":{\"prefix\":\"$prefix\",\"generation\":1}}")
check "restore on node 2: 200 ready ($(body_of "$r" | jq -c '{restore_ms, wake_ms}'))" \
	test "$(status_of "$r") $(body_of "$r" | jq -r .state)" = "200 ready"
check "node 2 fetched the template from S3" \
	test "$(body_of "$(api2 GET /v1/templates)" | jq '.templates | length')" = 1
check "on node 2: the same file and page" \
	test "$(shell "$A" "cat note.txt")|$(page_state "$A")" = "kept through S3|Far page|typed far"
# The bucket's readers may have had the old secrets (the state image holds
# them in memory): node 2 gave the sandbox new ones before it was ready.
vnc2=$(jq -r '.vnc_secret // empty' "$POOL2/sandboxes/$A/meta.json")
rec2=$(jq -r .desktop.rec_secret "$POOL2/sandboxes/$A/meta.json")
check "restored from S3, it has new VNC and recorder secrets" \
	bash -c "[[ -n '$vnc2' && '$vnc2' != '$vnc1' && -n '$rec2' && '$rec2' != '$rec1' ]]"
old_code=$(sb_ws_code "$A" "secret=$vnc1") new_code=$(sb_ws_code "$A" "secret=$vnc2")
check "... its desktop refuses the old VNC secret ($old_code) and takes the new one ($new_code)" \
	test "$old_code $new_code" = "403 101"

# --- a corrupted object
r=$(api2 POST "/v1/sandboxes/$A/hibernate")
[[ $(status_of "$r") == 200 ]] || echo "# hibernate on node 2: $r"
r=$(api2 POST "/v1/sandboxes/$A/offload")
[[ $(status_of "$r") == 200 ]] || echo "# offload from node 2: $r"
prefix2=$(body_of "$r" | jq -r .l2.prefix)
check "offloaded again from node 2 (generation 2)" test "$prefix2" = "$pre/sandboxes/$A/2/"
head -c 4096 /dev/urandom >"$work/junk"
aws3 put-object --bucket ckpt --key "${prefix2}state/checkpoint.img.zst" --body "$work/junk" >/dev/null
# Whoever can write to the bucket changes the manifest to match: the
# object's sha256 (its seal kept), or the seal dropped.  Node 1 refuses
# both before it fetches anything, so nothing is received or left.
aws3 get-object --bucket ckpt --key "${prefix2}manifest.json" "$work/m2.sealed" >/dev/null
junk_sha=$(sha256sum "$work/junk" | cut -d' ' -f1)
{ grep -v '^#cloche-seal ' "$work/m2.sealed" |
	jq -c --arg s "$junk_sha" '(.objects[] | select(.name == "state/checkpoint.img") | .sha256) = $s'
	grep '^#cloche-seal ' "$work/m2.sealed"; } >"$work/m2.forged"
grep -v '^#cloche-seal ' "$work/m2.forged" >"$work/m2.unsealed"
for forged in forged unsealed; do
	aws3 put-object --bucket ckpt --key "${prefix2}manifest.json" --body "$work/m2.$forged" >/dev/null
	r=$(api POST "/v1/sandboxes/$A/restore" "{\"l2\":{\"prefix\":\"$prefix2\",\"generation\":2}}")
	msg=$(body_of "$r" | jq -r .error.message)
	echo "# $msg"
	check "a $forged manifest: the restore refuses with 502 before fetching anything (${msg%%;*})" \
		bash -c "[[ '$(status_of "$r")' == 502 ]] && grep -qE 'does not match its seal|has no seal' <<<'$msg'"
	check "... and leaves nothing on node 1" \
		eval "gone $A && [[ ! -e $CLOCHE_POOL/checkpoints/$A ]] && [[ '$(status_of "$(api GET "/v1/sandboxes/$A")")' == 404 ]]"
done
aws3 put-object --bucket ckpt --key "${prefix2}manifest.json" --body "$work/m2.sealed" >/dev/null
r=$(api POST "/v1/sandboxes/$A/restore" "{\"l2\":{\"prefix\":\"$prefix2\",\"generation\":2}}")
check "a corrupted object: the restore fails with 502 and says so" \
	eval "[[ '$(status_of "$r")' == 502 ]] && grep -q corrupt <<<'$(body_of "$r" | jq -r .error.message)'"
echo "# $(body_of "$r" | jq -r .error.message)"
check "... and leaves nothing on node 1" \
	eval "gone $A && [[ ! -e $CLOCHE_POOL/checkpoints/$A ]] && [[ '$(status_of "$(api GET "/v1/sandboxes/$A")")' == 404 ]]"

# --- deletion of its objects
r=$(api DELETE "/v1/checkpoints/$A?prefix=$pre/sandboxes/$A/")
check "DELETE of the offloaded sandbox's objects: 200 ($(body_of "$r" | jq -r .deleted) keys)" \
	test "$(status_of "$r")" = 200
check "awscli sees none left" \
	test -z "$(aws3 list-objects-v2 --bucket ckpt --prefix "$pre/sandboxes/" --query 'Contents[].Key' --output text | grep -v None)"
r=$(api DELETE "/v1/checkpoints/$A?prefix=$pre/sandboxes/other/")
check "a prefix that is not the sandbox's: 400" test "$(status_of "$r")" = 400

check "both agents exit cleanly on SIGTERM" eval "node_stop && kill $n2_pid && wait $n2_pid"
n2_pid=
check "every line the agent logged is JSON" node_log_is_json
tap_exit
