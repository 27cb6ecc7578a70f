#!/usr/bin/env bash
# `make bench`: builds, makes sure the template exists, runs every
# benchmark one after the other (each needs the machine and the pool to
# itself), then bench/report.sh turns their figures (bench/results/*.json)
# into bench/results.json and bench/RESULTS.md with charts.  Prints a
# progress line per benchmark (n/N, the time so far, the load average);
# about 22 minutes on a 2-core machine (docs/benchmarks.md).
#
#   CLOCHE_BENCH_QUICK=1     fewer rounds and samples everywhere (a few
#                            minutes; the figures are then rough)
#   CLOCHE_BENCH="node proxy" only these benchmarks (the report still reads
#                            every results file there is)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -s -j2 all
CLOCHE_TEMPLATE=$(rootfs/build-template.sh | tail -n 1)
export CLOCHE_TEMPLATE

# The rounds of a full run, sized so the whole stays under 30 minutes here
# (expected about 25 on this 2-core VM: bench/node.sh 9-10, of which the
# capacity fill 4-6 with a 10-minute budget; portal 5-6; hibernate 3;
# browser-pages 2-3; novnc under 2; the rest 1-2 each); quick mode keeps
# every path and cuts the repetitions.
if [[ ${CLOCHE_BENCH_QUICK:-0} == 1 ]]; then
	export BENCH_BOOTS=${BENCH_BOOTS:-1} BENCH_SETTLE_S=${BENCH_SETTLE_S:-5} BENCH_IDLE_S=${BENCH_IDLE_S:-5}
	export NODE_BENCH_COLD=${NODE_BENCH_COLD:-1} NODE_BENCH_WARM=${NODE_BENCH_WARM:-1}
	export NODE_BENCH_MEM=${NODE_BENCH_MEM:-1} NODE_BENCH_SETTLE_S=${NODE_BENCH_SETTLE_S:-5}
	export NODE_BENCH_CPU_S=${NODE_BENCH_CPU_S:-3} NODE_BENCH_FILL=${NODE_BENCH_FILL:-9}
	export PORTAL_BENCH_WARM_N=${PORTAL_BENCH_WARM_N:-5} PORTAL_BENCH_SECONDS=${PORTAL_BENCH_SECONDS:-10}
	export PROXY_BENCH_ROUNDS=${PROXY_BENCH_ROUNDS:-1} PROXY_BENCH_SECONDS=${PROXY_BENCH_SECONDS:-3}
	export HIB_BENCH_ROUNDS=${HIB_BENCH_ROUNDS:-1} HIB_BENCH_L1=${HIB_BENCH_L1:-1} HIB_BENCH_L2=${HIB_BENCH_L2:-1}
	export BENCH_MCP_CALLS=${BENCH_MCP_CALLS:-50} BENCH_CALLS=${BENCH_CALLS:-50}
	export BENCH_MCP_DESKTOP_CALLS=${BENCH_MCP_DESKTOP_CALLS:-30}
else
	# The capacity fill (max_ready_sandboxes): desktops, as forks of an idle
	# one 8 at a time, until MemAvailable would fall below 2 GiB or the
	# agent refuses or fails one; no cap of its own, 10 minutes at most.
	export NODE_BENCH_FILL=${NODE_BENCH_FILL:-1000} NODE_BENCH_FILL_BUDGET_S=${NODE_BENCH_FILL_BUDGET_S:-600}
	# Enough warm acquires for a distribution (each waits for a refill's boot).
	export PORTAL_BENCH_WARM_N=${PORTAL_BENCH_WARM_N:-30}
fi

benches=(boot node portal proxy hibernate mcp mcp-desktop mcp-browser browser-pages novnc)
if [[ -n ${CLOCHE_BENCH:-} ]]; then
	read -r -a benches <<<"$CLOCHE_BENCH"
fi
t0=$(date +%s)
log=bench/results/bench.log
mkdir -p bench/results
: >"$log"
failed=()
load=()
for i in "${!benches[@]}"; do
	b=${benches[$i]}
	[[ -f bench/$b.sh ]] || { echo "bench/$b.sh does not exist" >&2; exit 2; }
	load+=("$b $(cut -d ' ' -f 1 /proc/loadavg)")
	printf '\n=== [%d/%d] bench/%s.sh (at %dm%02ds, load average %s)\n' "$((i + 1))" "${#benches[@]}" "$b" \
		"$((($(date +%s) - t0) / 60))" "$((($(date +%s) - t0) % 60))" "${load[-1]#* }" | tee -a "$log"
	# This run's figures or none: a failed bench's figures are null in the
	# report, with the reason; the earlier run's file is kept aside as
	# bench/results/NAME.json.prev.
	[[ -f bench/results/$b.json ]] && mv -f "bench/results/$b.json" "bench/results/$b.json.prev"
	s=$(date +%s)
	if ! bash "bench/$b.sh" 2>&1 | tee -a "$log"; then
		failed+=("$b")
		echo "bench/$b.sh FAILED: its figures are left out (the last run's are in bench/results/$b.json.prev; see $log)" | tee -a "$log"
		rm -f "bench/results/$b.json"
	else
		rm -f "bench/results/$b.json.prev"
	fi
	echo "--- bench/$b.sh took $(($(date +%s) - s)) s" | tee -a "$log"
done
printf '\n=== report (all benchmarks took %dm%02ds)\n' "$((($(date +%s) - t0) / 60))" "$((($(date +%s) - t0) % 60))"
BENCH_TOTAL_S=$(($(date +%s) - t0)) BENCH_QUICK=${CLOCHE_BENCH_QUICK:-0} BENCH_FAILED="${failed[*]}" \
	BENCH_LOAD="$(IFS=,; echo "${load[*]}")" bash bench/report.sh
((${#failed[@]} == 0)) || { echo "failed: ${failed[*]}" >&2; exit 1; }
