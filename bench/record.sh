#!/usr/bin/env bash
# Benchmark: what a screen recording costs (docs/recording.md), through the
# node agent's API on one desktop sandbox with a long page open:
#   CPU of the whole sandbox (its cgroup, as the host pays it, ptrace
#   included; gVisor's own per-process ticks for ffmpeg were 4-5 times the
#   host's figure, so they are not used) over REC_BENCH_SECONDS (20) windows: idle without and with a recording, and
#   scrolling (xdotool, 10 wheel clicks a second) without and with one;
#   the MP4's bytes per minute idle and scrolling; start and stop latency
#   (request to answer).  REC_BENCH_ROUNDS (2) rounds; prints a table and
#   writes bench/results/record.json.  Needs the pool to itself.
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

secs=${REC_BENCH_SECONDS:-20}
rounds=${REC_BENCH_ROUNDS:-2}
out=bench/results/record.json
[[ $secs =~ ^[0-9]+$ && $rounds =~ ^[0-9]+$ ]] && ((secs >= 5 && rounds >= 1)) || die "bad REC_BENCH_SECONDS or REC_BENCH_ROUNDS"
[[ -x $NODE_BIN ]] || die "$NODE_BIN is not built"
[[ -n "$(sb_latest_template desktop)" ]] || die "no desktop template (make template)"

pre=br-$$
node_setup "$pre"
A=$pre-a
cleanup() {
	api DELETE "/v1/sandboxes/$A" >/dev/null 2>&1
	node_cleanup
}
trap cleanup EXIT
node_start || die "the node agent did not start"
r=$(api POST /v1/sandboxes "{\"id\":\"$A\"}")
[[ $(status_of "$r") == 201 ]] || die "create: $r"
sh_in() { mcp_call "$A" 8889 run_command "$(jq -nc --arg c "$1" '{command: $c, timeout_ms: 120000}')"; }
sh_in 'seq 1 20000 | sed "s|.*|<p style=\"font:20px sans-serif\">line & of a long page</p>|" > /tmp/long.html' >/dev/null
mcp_call "$A" 7999 browser_navigate '{"url":"file:///tmp/long.html"}' >/dev/null || die "no page"
sleep 5

cpu_ms() { body_of "$(api GET "/v1/sandboxes/$A")" | jq -r .cpu_ms; }
# window scroll|idle: prints the sandbox's CPU (% of a core) over $secs.
window() {
	local c0 c1 t0 t1
	c0=$(cpu_ms) t0=$(now_ms)
	if [[ $1 == scroll ]]; then
		sh_in "timeout $secs sh -c 'while :; do xdotool click 5; sleep 0.1; done'; true" >/dev/null
	else
		sleep "$secs"
	fi
	c1=$(cpu_ms) t1=$(now_ms)
	awk -v c="$((c1 - c0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.1f", 100 * c / t }'
}
rec() { # start|stop: the time it took in $REC_MS, the recording's id in $REC, its record in $REC_JSON
	local t0 r
	t0=$(now_ms)
	if [[ $1 == start ]]; then
		r=$(api POST "/v1/sandboxes/$A/recordings" '{}')
		REC=$(body_of "$r" | jq -r .recording.id)
	else
		r=$(api POST "/v1/sandboxes/$A/recordings/$REC/stop" '{}')
		REC_JSON=$(body_of "$r")
	fi
	[[ $(status_of "$r") == 20[01] ]] || die "$1: $r"
	REC_MS=$(($(now_ms) - t0))
}
per_min() { jq -r '(.bytes / (.duration_ms / 60000)) | floor' <<<"$REC_JSON"; }

REC= REC_JSON= REC_MS=
samples=()
for ((k = 1; k <= rounds; k++)); do
	idle_host=$(window idle)
	rec start
	ms_start=$REC_MS
	idle_rec_host=$(window idle)
	rec stop
	ms_stop=$REC_MS
	idle_bpm=$(per_min)
	scroll_host=$(window scroll)
	rec start
	scroll_rec_host=$(window scroll)
	rec stop
	scroll_bpm=$(per_min)
	s=$(jq -nc --argjson r "$k" --argjson ih "$idle_host" --argjson irh "$idle_rec_host" \
		--argjson sh "$scroll_host" --argjson srh "$scroll_rec_host" --argjson ib "$idle_bpm" --argjson sb "$scroll_bpm" \
		--argjson st "$ms_start" --argjson sp "$ms_stop" \
		'{round: $r, idle_host_cpu_pct: $ih, idle_rec_host_cpu_pct: $irh,
		  scroll_host_cpu_pct: $sh, scroll_rec_host_cpu_pct: $srh,
		  idle_bytes_per_min: $ib, scroll_bytes_per_min: $sb, start_ms: $st, stop_ms: $sp}')
	samples+=("$s")
	echo "# round $k: $s"
done
mkdir -p "$(dirname "$out")"
printf '%s\n' "${samples[@]}" | jq -s --argjson secs "$secs" '{window_s: $secs, samples: .}' >"$out"
printf '%-28s %s\n' "" "$(seq -s ' ' 1 "$rounds" | sed 's/[0-9]*/round&/g')"
for f in idle_host_cpu_pct idle_rec_host_cpu_pct scroll_host_cpu_pct scroll_rec_host_cpu_pct \
	idle_bytes_per_min scroll_bytes_per_min start_ms stop_ms; do
	printf '%-28s %s\n' "$f" "$(jq -r ".samples[].$f" "$out" | tr '\n' ' ')"
done
