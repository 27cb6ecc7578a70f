#!/usr/bin/env bash
# `make bench`: builds, makes sure the template exists, runs every
# benchmark one after the other (each needs the machine and the pool to
# itself), then bench/report.sh turns their figures (bench/results/*.json)
# into bench/results.json and bench/RESULTS.md with charts.  Prints a
# progress line per benchmark with the time so far; about 25 minutes on a
# 2-core machine.
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

# The rounds of a full run, sized so the whole stays under 30 minutes here;
# quick mode keeps every path and cuts the repetitions.
if [[ ${CLOCHE_BENCH_QUICK:-0} == 1 ]]; then
	export BENCH_BOOTS=${BENCH_BOOTS:-1} BENCH_SETTLE_S=${BENCH_SETTLE_S:-5} BENCH_IDLE_S=${BENCH_IDLE_S:-5}
	export NODE_BENCH_COLD=${NODE_BENCH_COLD:-1} NODE_BENCH_WARM=${NODE_BENCH_WARM:-1}
	export NODE_BENCH_MEM=${NODE_BENCH_MEM:-1} NODE_BENCH_SETTLE_S=${NODE_BENCH_SETTLE_S:-5}
	export NODE_BENCH_CPU_S=${NODE_BENCH_CPU_S:-3} NODE_BENCH_FILL=${NODE_BENCH_FILL:-3}
	export PORTAL_BENCH_WARM_N=${PORTAL_BENCH_WARM_N:-5} PORTAL_BENCH_SECONDS=${PORTAL_BENCH_SECONDS:-10}
	export PROXY_BENCH_ROUNDS=${PROXY_BENCH_ROUNDS:-1} PROXY_BENCH_SECONDS=${PROXY_BENCH_SECONDS:-3}
	export HIB_BENCH_ROUNDS=${HIB_BENCH_ROUNDS:-1}
	export BENCH_MCP_CALLS=${BENCH_MCP_CALLS:-50} BENCH_CALLS=${BENCH_CALLS:-50}
	export BENCH_MCP_DESKTOP_CALLS=${BENCH_MCP_DESKTOP_CALLS:-30}
else
	# The capacity fill: desktops one at a time until memory (2 GiB kept
	# free) or this many; it gives max_ready_sandboxes.  64 take about 12 of
	# the run's 24 minutes on a 2-core machine.
	export NODE_BENCH_FILL=${NODE_BENCH_FILL:-64}
fi

benches=(boot node portal proxy hibernate mcp mcp-desktop mcp-browser)
if [[ -n ${CLOCHE_BENCH:-} ]]; then
	read -r -a benches <<<"$CLOCHE_BENCH"
fi
t0=$(date +%s)
log=bench/results/bench.log
mkdir -p bench/results
: >"$log"
failed=()
for i in "${!benches[@]}"; do
	b=${benches[$i]}
	[[ -f bench/$b.sh ]] || { echo "bench/$b.sh does not exist" >&2; exit 2; }
	printf '\n=== [%d/%d] bench/%s.sh (at %dm%02ds)\n' "$((i + 1))" "${#benches[@]}" "$b" \
		"$((($(date +%s) - t0) / 60))" "$((($(date +%s) - t0) % 60))" | tee -a "$log"
	s=$(date +%s)
	if ! bash "bench/$b.sh" 2>&1 | tee -a "$log"; then
		failed+=("$b")
		echo "bench/$b.sh FAILED (its figures stay as they were: see $log)" | tee -a "$log"
	fi
	echo "--- bench/$b.sh took $(($(date +%s) - s)) s" | tee -a "$log"
done
printf '\n=== report (all benchmarks took %dm%02ds)\n' "$((($(date +%s) - t0) / 60))" "$((($(date +%s) - t0) % 60))"
BENCH_TOTAL_S=$(($(date +%s) - t0)) BENCH_QUICK=${CLOCHE_BENCH_QUICK:-0} bash bench/report.sh
((${#failed[@]} == 0)) || { echo "failed: ${failed[*]}" >&2; exit 1; }
