#!/usr/bin/env bash
# Benchmark: hibernation on this machine, through the node agent's API.
#   1. checkpoint (hibernate) of a desktop with a page open: time and the
#      image's size, raw (L1) and zstd-compressed (what goes to S3);
#   2. wake from L1 to the first MCP answer (an `initialize` POST to
#      mcp-shell, sent from the router netns as soon as the wake answers);
#      1 and 2 HIB_BENCH_L1 (3) times a round;
#   3. offload to S3 (s3rver on loopback): bytes, rootfs delta, upload time;
#      restore from S3 (template present) to the first MCP answer;
#      HIB_BENCH_L2 (2) times a round;
#   4. fork into HIB_BENCH_FORK (4): request to four ready children, and
#      to the first MCP answer of each; once a round.
# HIB_BENCH_ROUNDS (3) rounds; prints a table with min/median/max and writes
# bench/results/hibernate.json with every sample.  Needs the pool to itself (like
# bench/node.sh: no other agent).  Run it on an otherwise idle machine.
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh
. tests/lib/s3.sh

rounds=${HIB_BENCH_ROUNDS:-3}
forks=${HIB_BENCH_FORK:-4}
l1_n=${HIB_BENCH_L1:-3}
l2_n=${HIB_BENCH_L2:-2}
out=bench/results/hibernate.json
for v in rounds forks l1_n l2_n; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1)) || die "$v must be a whole number, at least 1 (got \`${!v}\`)"
done
((forks <= 8)) || die "HIB_BENCH_FORK is at most 8 (what one fork makes)"
[[ -x $S3RVER ]] || die "s3rver is not installed (scripts/install-deps.sh)"
[[ -x $NODE_BIN ]] || die "$NODE_BIN is not built"
[[ -n "$(sb_latest_template desktop)" ]] || die "no desktop template (make template)"
pgrep -x cloche-node >/dev/null && die "another cloche-node runs (this bench needs the pool)"

pre=bh-$$
node_setup "$pre"
work=$NODE_WORK
s3_port=$(free_port)
s3_pid=
ids=()
cleanup() {
	local id
	for id in "${ids[@]}"; do api DELETE "/v1/sandboxes/$id" >/dev/null 2>&1; done
	[[ -z $s3_pid ]] || kill "$s3_pid" 2>/dev/null
	node_cleanup
}
trap cleanup EXIT

s3rver_start "$work/s3" "$s3_port" ckpt "$work/s3rver.log"
s3_pid=$S3RVER_PID
export CLOCHE_S3_ACCESS_KEY=S3RVER CLOCHE_S3_SECRET_KEY=S3RVER
CLOCHE_S3_SEAL_KEY=$(head -c 32 /dev/urandom | base64)
export CLOCHE_S3_SEAL_KEY
node_start --s3-endpoint "http://127.0.0.1:$s3_port" --s3-bucket ckpt --s3-prefix "$pre/" ||
	die "the node agent did not start"

# first_answer ID: ms until mcp-shell answers an initialize (polled).
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
mcp_up() {
	nsenter --net="/var/run/netns/R-$1" curl -s -m 2 -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		--data "$INIT" http://10.0.2.15:8889/mcp 2>/dev/null
}
wait_mcp() {
	for ((k = 0; k < 400; k++)); do [[ $(mcp_up "$1") == 200 ]] && return 0; sleep 0.02; done
	return 1
}
stats() { # numbers on stdin -> "min median max"
	sort -n | awk '{a[NR]=$1} END {if (NR) printf "%s %s %s", a[1], a[int((NR+1)/2)], a[NR]; else print "- - -"}'
}

A=$pre-a
ids+=("$A")
r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
[[ $(status_of "$r") == 201 ]] || die "create: $r"
mcp_call "$A" 8889 write_file '{"path":"note.txt","content":"bench"}' >/dev/null
mcp_call "$A" 8889 write_file '{"path":"p.html","content":"<title>bench</title><input id=q>"}' >/dev/null
mcp_call "$A" 7999 browser_navigate '{"url":"file:///home/agent/p.html"}' >/dev/null
sleep 5 # let the desktop settle

: >"$work/ckpt" && : >"$work/state" && : >"$work/wake1" && : >"$work/zst" && : >"$work/rootfs" &&
	: >"$work/wake2" && : >"$work/upload" && : >"$work/fork" && : >"$work/fork_mcp"
for ((round = 1; round <= rounds; round++)); do
	for ((c = 1; c <= l1_n; c++)); do
		r=$(api POST "/v1/sandboxes/$A/hibernate")
		[[ $(status_of "$r") == 200 ]] || die "hibernate: $r"
		body_of "$r" | jq -r .checkpoint.total_ms >>"$work/ckpt"
		body_of "$r" | jq -r '.checkpoint.state_bytes / 1048576 | floor' >>"$work/state"
		t0=$(now_ms)
		r=$(api POST "/v1/sandboxes/$A/wake")
		[[ $(status_of "$r") == 200 ]] || die "wake: $r"
		wait_mcp "$A" || die "no MCP answer after the wake"
		echo $(($(now_ms) - t0)) >>"$work/wake1"
	done

	for ((c = 1; c <= l2_n; c++)); do
		api POST "/v1/sandboxes/$A/hibernate" >/dev/null
		r=$(api POST "/v1/sandboxes/$A/offload")
		[[ $(status_of "$r") == 200 ]] || die "offload: $r"
		body_of "$r" | jq -r '.l2.state_bytes / 1048576 | floor' >>"$work/zst"
		body_of "$r" | jq -r '.l2.rootfs_bytes' >>"$work/rootfs"
		body_of "$r" | jq -r .l2.upload_ms >>"$work/upload"
		l2=$(body_of "$r" | jq -c .l2)
		t0=$(now_ms)
		r=$(api POST "/v1/sandboxes/$A/restore" "{\"l2\":$l2}")
		[[ $(status_of "$r") == 200 ]] || die "restore: $r"
		wait_mcp "$A" || die "no MCP answer after the restore"
		echo $(($(now_ms) - t0)) >>"$work/wake2"
		api DELETE "/v1/checkpoints/$A?prefix=$(jq -r .prefix <<<"$l2")" >/dev/null
	done

	kids=()
	for ((k = 1; k <= forks; k++)); do kids+=("$pre-r$round-k$k"); done
	ids+=("${kids[@]}")
	t0=$(now_ms)
	r=$(api POST "/v1/sandboxes/$A/fork" "$(printf '%s\n' "${kids[@]}" | jq -R . | jq -sc '{ids: .}')")
	[[ $(status_of "$r") == 200 ]] || die "fork: $r"
	echo $(($(now_ms) - t0)) >>"$work/fork"
	for k in "${kids[@]}"; do wait_mcp "$k" || die "no MCP answer from $k"; done
	echo $(($(now_ms) - t0)) >>"$work/fork_mcp"
	for k in "${kids[@]}"; do api DELETE "/v1/sandboxes/$k" >/dev/null; done
done

row() { # name file unit target
	read -r mn md mx < <(stats <"$work/$2")
	printf '%-44s %8s %8s %8s %-4s %s\n' "$1" "$mn" "$md" "$mx" "$3" "$4"
	jq -n --arg k "$2" --argjson mn "$mn" --argjson md "$md" --argjson mx "$mx" --arg u "$3" \
		--argjson s "$(jq -s . <"$work/$2")" \
		'{($k): {min: $mn, median: $md, max: $mx, unit: $u, samples: $s}}' >>"$work/json"
}
: >"$work/json"
printf '%-44s %8s %8s %8s\n' "hibernation ($rounds rounds of $l1_n L1, $l2_n L2, 1 fork; $(nproc) cores)" min median max
row "checkpoint (hibernate request)" ckpt ms ""
row "state image on the node (raw)" state MiB "target <= 40 MB (in S3)"
row "state image in S3 (zstd -3)" zst MiB "target <= 40 MB"
row "rootfs delta in S3 (zstd)" rootfs B "target <= 5 MB"
row "wake from L1 to first MCP answer" wake1 ms "target <= 500"
row "offload upload" upload ms ""
row "wake from L2 (restore) to first MCP answer" wake2 ms "target <= 2000"
row "fork into $forks: request to $forks ready children" fork ms "target <= 2000"
row "fork into $forks: to each child's first MCP answer" fork_mcp ms ""
jq -s --arg when "$(date -u +%FT%TZ)" --arg runsc "$(runsc --version 2>/dev/null | head -1)" \
	--argjson rounds "$rounds" --argjson forks "$forks" --argjson l1 "$l1_n" --argjson l2 "$l2_n" \
	'add + {when: $when, runsc: $runsc, rounds: $rounds, l1_per_round: $l1, l2_per_round: $l2, forks: $forks}' "$work/json" >"$out"
echo "wrote $out"
