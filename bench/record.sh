#!/usr/bin/env bash
# Benchmark: what a screen recording costs (docs/recording.md), through the
# node agent's API on one desktop sandbox with a long page open:
#   CPU of the whole sandbox (its cgroup, as the host pays it, ptrace
#   included) and of ffmpeg alone (its ticks inside the guest) over
#   REC_BENCH_SECONDS (20) windows: idle without and with a recording, and
#   scrolling (xdotool, 10 wheel clicks a second) without and with one;
#   the MP4's bytes per minute idle and scrolling; start and stop latency
#   (request to answer).  REC_BENCH_ROUNDS (2) rounds; prints a table and
#   writes bench/results/record.json.  Needs the pool to itself.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. tests/lib/tap.sh # free_port, now_ms
. tests/lib/sandbox.sh

secs=${REC_BENCH_SECONDS:-20}
rounds=${REC_BENCH_ROUNDS:-2}
out=bench/results/record.json
die() { echo "bench/record.sh: $*" >&2; exit 1; }
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
ff_ticks() { sh_in 'p=$(pgrep -x ffmpeg) && set -- $(cut -d" " -f14,15 /proc/$p/stat) && echo $(($1 + $2))' 2>/dev/null | tr -dc 0-9; }
# window scroll|idle: prints "host_cpu_pct ffmpeg_cpu_pct" over $secs.
window() {
	local c0 c1 f0 f1 t0 t1
	f0=$(ff_ticks) c0=$(cpu_ms) t0=$(now_ms)
	if [[ $1 == scroll ]]; then
		sh_in "timeout $secs sh -c 'while :; do xdotool click 5; sleep 0.1; done'; true" >/dev/null
	else
		sleep "$secs"
	fi
	c1=$(cpu_ms) t1=$(now_ms) f1=$(ff_ticks)
	awk -v c="$((c1 - c0))" -v t="$((t1 - t0))" -v f0="${f0:-0}" -v f1="${f1:-0}" \
		'BEGIN { printf "%.1f %.1f", 100 * c / t, (f1 > f0 ? 1000 * (f1 - f0) / t : 0) }'
}
rec() { # start|stop -> ms; the recording's id in $REC, its record in $REC_JSON
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
	echo $(($(now_ms) - t0))
}
per_min() { jq -r '(.bytes / (.duration_ms / 60000)) | floor' <<<"$REC_JSON"; }

samples=()
for ((k = 1; k <= rounds; k++)); do
	read -r idle_host _ < <(window idle)
	ms_start=$(rec start)
	read -r idle_rec_host idle_ff < <(window idle)
	ms_stop=$(rec stop)
	idle_bpm=$(per_min)
	read -r scroll_host _ < <(window scroll)
	rec start >/dev/null
	read -r scroll_rec_host scroll_ff < <(window scroll)
	rec stop >/dev/null
	scroll_bpm=$(per_min)
	s=$(jq -nc --argjson r "$k" --argjson ih "$idle_host" --argjson irh "$idle_rec_host" \
		--argjson iff "$idle_ff" --argjson sh "$scroll_host" --argjson srh "$scroll_rec_host" \
		--argjson sff "$scroll_ff" --argjson ib "$idle_bpm" --argjson sb "$scroll_bpm" \
		--argjson st "$ms_start" --argjson sp "$ms_stop" \
		'{round: $r, idle_host_cpu_pct: $ih, idle_rec_host_cpu_pct: $irh, idle_ffmpeg_cpu_pct: $iff,
		  scroll_host_cpu_pct: $sh, scroll_rec_host_cpu_pct: $srh, scroll_ffmpeg_cpu_pct: $sff,
		  idle_bytes_per_min: $ib, scroll_bytes_per_min: $sb, start_ms: $st, stop_ms: $sp}')
	samples+=("$s")
	echo "# round $k: $s"
done
mkdir -p "$(dirname "$out")"
printf '%s\n' "${samples[@]}" | jq -s --argjson secs "$secs" '{window_s: $secs, samples: .}' >"$out"
printf '%-28s %s\n' "" "$(seq -s ' ' 1 "$rounds" | sed 's/[0-9]*/round&/g')"
for f in idle_host_cpu_pct idle_rec_host_cpu_pct idle_ffmpeg_cpu_pct scroll_host_cpu_pct \
	scroll_rec_host_cpu_pct scroll_ffmpeg_cpu_pct idle_bytes_per_min scroll_bytes_per_min start_ms stop_ms; do
	printf '%-28s %s\n' "$f" "$(jq -r ".samples[].$f" "$out" | tr '\n' ' ')"
done
