#!/usr/bin/env bash
# Benchmark: cloche-portal's acquire path through its HTTP API, with a real
# cloche-node (runsc sandboxes) behind it, on this machine.
#   1. warm acquire: PORTAL_BENCH_WARM_N (15) acquires, each when the node's
#      warm pool (PORTAL_BENCH_POOL, 2) has a ready member, timed by the
#      client (curl time_total); each is released at once.  p50 / p99.
#   2. acquire+release pairs per second: PORTAL_BENCH_CLIENTS (4) clients
#      loop acquire -> release for PORTAL_BENCH_SECONDS (40 s) while the warm
#      pool refills; the node holds at most PORTAL_BENCH_MAX (4) sandboxes.
#   3. queue wait under contention: the same clients hold each sandbox for
#      PORTAL_BENCH_HOLD_S (2 s): more clients than room, so acquires queue;
#      the portal's own queue-wait histogram and the clients' acquire p50/p99.
# The node is a tests/lib/cluster.sh host: its own netns address and pool
# directory (a read-only snapshot of the template on the same btrfs), so it
# never meets another agent's sandboxes.  Prints a
# table and writes bench/results/portal.json.
#
#   PORTAL_BENCH_TEMPLATE (desktop; `mini`: the desktop with only mcp-shell, made for the
#     run, so that boots take a second and the figures show the portal and the node)
#   CLOCHE_BUILD (build)  CLOCHE_POOL (/var/lib/cloche)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

warm_n=${PORTAL_BENCH_WARM_N:-15}
pool_k=${PORTAL_BENCH_POOL:-2}
clients=${PORTAL_BENCH_CLIENTS:-4}
secs=${PORTAL_BENCH_SECONDS:-40}
maxsb=${PORTAL_BENCH_MAX:-4}
hold=${PORTAL_BENCH_HOLD_S:-2}
tname=${PORTAL_BENCH_TEMPLATE:-desktop}
build=${CLOCHE_BUILD:-build}
main_pool=${CLOCHE_POOL:-/var/lib/cloche}
out=bench/results/portal.json

((EUID == 0)) || die "run as root"
[[ -x $build/bin/cloche-portal && -x $build/bin/cloche-node ]] || die "build first: make all"
src=$(ls -1dt "$main_pool/templates/$tname"@* 2>/dev/null | head -n 1)
if [[ -z $src && $tname == mini ]]; then
	# tests/lib/cluster.sh's mini template: the desktop with only mcp-shell,
	# so the figures are the portal's and the node's, not Chromium's boot.
	desk=$(ls -1dt "$main_pool/templates/desktop"@* 2>/dev/null | head -n 1)
	[[ -n $desk ]] || die "no desktop template in $main_pool/templates: make template"
	mini_dir=$main_pool/pools/bench-mini-$$
	mkdir -p "$mini_dir/templates"
fi
[[ -n $src || -n ${mini_dir:-} ]] || die "no $tname template in $main_pool/templates: make template"

. tests/lib/cluster.sh
portal_pid=
cleanup() {
	[[ -n $portal_pid ]] && kill "$portal_pid" 2>/dev/null
	cluster_down
	if [[ -n ${mini_dir:-} ]]; then
		for t in "$mini_dir"/templates/*; do [[ -d $t ]] && btrfs subvolume delete "$t" >/dev/null 2>&1; done
		rm -rf --one-file-system "$mini_dir"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
work=$(mktemp -d /tmp/bench-portal.XXXXXX)
if [[ -n ${mini_dir:-} ]]; then
	src=$(cluster_template_mini "$desk" "$mini_dir") || die "cannot make the mini template"
fi
cluster_up "bp$$" 1 "$src" || die "cannot set up the node's host and pool"
pport=$(free_port)
portal=http://$CLUSTER_BR_IP:$pport
"$build/bin/cloche-portal" --listen "$CLUSTER_BR_IP" --port "$pport" --db "$work/portal.db" \
	--token-key-file "$work/token.key" --node-credential-file "$CLUSTER_WORK/cred" \
	--default-template "$tname" --queue-max 1000 --heartbeat-interval 500ms \
	>"$work/portal.log" 2>&1 &
portal_pid=$!
key=$("$build/bin/cloche-portal" --db "$work/portal.db" key-create bench admin) || die "key-create"
CLUSTER_PORTAL_URL=$portal cluster_start 1 --template-name "$tname" --warm-pool "$tname=$pool_k" \
	--max-sandboxes "$maxsb" || die "the node agent did not start ($CLUSTER_WORK/n1.log)"

api() { curl -s -m 600 -X "$1" -H "Authorization: Bearer $key" ${3:+--data-binary "$3"} "$portal$2"; }
warm_ready() { api GET /sbv1/templates | jq "[.templates[] | select(.name == \"$tname\") | .warm_ready] | add // 0"; }
wait_warm() { # wait until N members are ready (at most 600 s)
	local i
	for ((i = 0; i < 3000; i++)); do
		(($(warm_ready) >= $1)) && return 0
		sleep 0.2
	done
	die "the warm pool did not fill (node log: $CLUSTER_WORK/n1.log)"
}
pct() { # P FILE: the P-th percentile of the numbers in FILE (nearest rank)
	sort -n "$2" | awk -v p="$1" '{a[NR] = $1} END {if (!NR) {print "null"; exit}
		r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; print a[r]}'
}

echo "filling the warm pool ($pool_k x $tname) ..." >&2
wait_warm "$pool_k"

# 1. warm acquires, one at a time.
: >"$work/warm.ms"
warm_hits=0
for ((i = 0; i < warm_n; i++)); do
	wait_warm 1
	r=$(curl -s -m 60 -o "$work/a.json" -w '%{http_code} %{time_total}' -X POST \
		-H "Authorization: Bearer $key" --data-binary '{"ttl":120,"wait":0}' "$portal/sbv1/acquire")
	[[ ${r%% *} == 201 ]] || die "warm acquire answered ${r%% *}: $(cat "$work/a.json")"
	awk -v t="${r#* }" 'BEGIN {printf "%.2f\n", t * 1000}' >>"$work/warm.ms"
	id=$(jq -r .id "$work/a.json")
	api GET "/sbv1/sandboxes/$id/events" | jq -e '.events[] | select(.reason | test("claimed pool member"))' >/dev/null &&
		warm_hits=$((warm_hits + 1))
	api POST "/sbv1/sandboxes/$id/release" >/dev/null
done
warm_p50=$(pct 50 "$work/warm.ms")
warm_p99=$(pct 99 "$work/warm.ms")
echo "warm acquire: p50 $warm_p50 ms, p99 $warm_p99 ms ($warm_hits of $warm_n from the pool)" >&2

# 2 and 3: clients in a loop; hold 0 s (pairs per second), then hold $hold s (queueing).
loop_clients() { # HOLD_S TAG
	local c pids=()
	for ((c = 0; c < clients; c++)); do
		(
			end=$(($(date +%s) + secs))
			while (($(date +%s) < end)); do
				r=$(curl -s -m 600 -o "$work/$2-$c.json" -w '%{http_code} %{time_total}' -X POST \
					-H "Authorization: Bearer $key" --data-binary '{"ttl":300,"wait":300}' "$portal/sbv1/acquire")
				[[ ${r%% *} == 201 ]] || { echo "fail ${r%% *}" >>"$work/$2.fail"; sleep 1; continue; }
				awk -v t="${r#* }" 'BEGIN {printf "%.2f\n", t * 1000}' >>"$work/$2.ms"
				sleep "$1"
				api POST "/sbv1/sandboxes/$(jq -r .id "$work/$2-$c.json")/release" >/dev/null
			done
		) &
		pids+=($!)
	done
	wait "${pids[@]}" # not a bare wait: the portal and the node are children too
}
metric() { curl -s "$portal/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

wait_warm "$pool_k"
: >"$work/pairs.ms"
t0=$(now_ms)
loop_clients 0 pairs
t1=$(now_ms)
pairs=$(wc -l <"$work/pairs.ms")
pairs_s=$(awk -v n="$pairs" -v ms="$((t1 - t0))" 'BEGIN {printf "%.2f", n / (ms / 1000)}')
pairs_p50=$(pct 50 "$work/pairs.ms")
pairs_p99=$(pct 99 "$work/pairs.ms")
echo "pairs: $pairs in $(((t1 - t0) / 1000)) s = $pairs_s/s with $clients clients; acquire p50 $pairs_p50 ms, p99 $pairs_p99 ms" >&2

wait_warm "$pool_k"
qs0=$(metric cloche_portal_queue_wait_seconds_sum)
qc0=$(metric cloche_portal_queue_wait_seconds_count)
: >"$work/hold.ms"
loop_clients "$hold" hold
qs1=$(metric cloche_portal_queue_wait_seconds_sum)
qc1=$(metric cloche_portal_queue_wait_seconds_count)
queued=$(awk -v a="$qc1" -v b="$qc0" 'BEGIN {print a - b}')
qmean=$(awk -v s1="$qs1" -v s0="$qs0" -v n="$queued" 'BEGIN {if (n > 0) printf "%.0f", (s1 - s0) / n * 1000; else print "null"}')
hold_n=$(wc -l <"$work/hold.ms")
hold_p50=$(pct 50 "$work/hold.ms")
hold_p99=$(pct 99 "$work/hold.ms")
fails=$(cat "$work"/*.fail 2>/dev/null | wc -l)
echo "contention: $hold_n acquires, $queued queued, mean queue wait $qmean ms; acquire p50 $hold_p50 ms, p99 $hold_p99 ms; $fails failed" >&2

printf '\n%-44s %s\n' "portal (template $tname, node max $maxsb, pool $pool_k)" "figure"
printf '%-44s %s / %s ms\n' "warm acquire p50 / p99 (HTTP, client)" "$warm_p50" "$warm_p99"
printf '%-44s %s /s\n' "acquire+release pairs ($clients clients)" "$pairs_s"
printf '%-44s %s ms (%s of %s queued)\n' "mean queue wait (hold ${hold}s)" "$qmean" "$queued" "$hold_n"
printf '%-44s %s / %s ms\n' "acquire p50 / p99 under contention" "$hold_p50" "$hold_p99"
[[ $tname == desktop ]] || out=bench/results/portal-$tname.json
jq -n --arg t "$tname" --argjson maxsb "$maxsb" --argjson pool "$pool_k" --argjson clients "$clients" \
	--argjson wn "$warm_n" --argjson wh "$warm_hits" --argjson w50 "$warm_p50" --argjson w99 "$warm_p99" \
	--argjson wsamples "$(jq -s . "$work/warm.ms")" \
	--argjson pairs "$pairs" --argjson ps "$pairs_s" --argjson p50 "$pairs_p50" --argjson p99 "$pairs_p99" \
	--argjson hn "$hold_n" --argjson q "$queued" --argjson qm "$qmean" --argjson h50 "$hold_p50" \
	--argjson h99 "$hold_p99" --argjson fails "$fails" --arg when "$(date -u +%FT%TZ)" \
	--argjson load "$(cut -d' ' -f1 /proc/loadavg)" \
	'{when: $when, loadavg_at_end: $load, template: $t, node_max_sandboxes: $maxsb, warm_pool: $pool,
	  warm_acquire: {n: $wn, from_pool: $wh, p50_ms: $w50, p99_ms: $w99, samples_ms: $wsamples},
	  pairs: {clients: $clients, n: $pairs, per_second: $ps, acquire_p50_ms: $p50, acquire_p99_ms: $p99},
	  contention: {clients: $clients, acquires: $hn, queued: $q, mean_queue_wait_ms: $qm,
	               acquire_p50_ms: $h50, acquire_p99_ms: $h99, failed: $fails}}' >"$out"
echo "wrote $out" >&2
