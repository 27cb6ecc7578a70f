#!/usr/bin/env bash
# The benchmark report: reads what the benchmarks wrote (bench/results/*.json)
# and writes
#   bench/results.json  the headline figures under fixed keys: a number each,
#                       or null with the reason under "reasons"; plus when,
#                       where and how long
#   bench/RESULTS.md    the same as a table with targets, the machine, the
#                       date, and charts of the latency distributions
#   bench/charts/*.png  (gnuplot): acquire, wake/checkpoint/fork, MCP calls
# Run by `make bench` after the benchmarks; runs alone on whatever results
# are there.
set -euo pipefail
cd "$(dirname "$0")/.."
R=bench/results
command -v gnuplot >/dev/null || { echo "bench/report.sh: gnuplot is missing (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p bench/charts

# j FILE FILTER: the filter's value in bench/results/FILE.json, or null.
j() { [[ -s $R/$1.json ]] && jq -c "$2 // null" "$R/$1.json" 2>/dev/null || echo null; }
# why FILE: the reason a figure of FILE is missing.
why() { [[ -s $R/$1.json ]] && echo "bench/$1.sh did not report it" || echo "bench/$1.sh has not run (no $R/$1.json)"; }

declare -A V SRC
set_fig() { # KEY FILE FILTER
	V[$1]=$(j "$2" "$3")
	SRC[$1]=$2
}
set_fig acquire_warm_p50_ms portal '.warm_acquire.p50_ms'
set_fig acquire_warm_p99_ms portal '.warm_acquire.p99_ms'
set_fig cold_start_s node '(.cold.create_ms_median / 1000 * 100 | round / 100)'
set_fig wake_l1_s hibernate '(.wake1.median / 1000 * 100 | round / 100)'
set_fig wake_l2_s hibernate '(.wake2.median / 1000 * 100 | round / 100)'
set_fig checkpoint_s hibernate '(.ckpt.median / 1000 * 100 | round / 100)'
set_fig checkpoint_state_mb hibernate '(.zst.median * 1.048576 | round)'
set_fig checkpoint_rootfs_delta_mb hibernate '(.rootfs.median / 1024 * 1.048576 * 1000 | round / 1000)'
set_fig fork4_s hibernate '(.fork.median / 1000 * 100 | round / 100)'
set_fig proxy_vs_nginx_rps_ratio proxy '.small.rps_ratio'
set_fig proxy_p99_ms proxy '.small.cloche.p99_ms'
set_fig nginx_p99_ms proxy '.small.nginx.p99_ms'
set_fig mcp_shell_call_p50_ms mcp '.shell_run_command_p50_ms'
set_fig mcp_screenshot_p50_ms mcp-desktop '.screenshot_p50_ms'
set_fig mcp_snapshot_p50_ms mcp-browser '.p50_ms'
set_fig idle_sandbox_mem_mb node '((.memory.sentry_pss_mib + .memory.gofer_pss_mib) * 1.048576 | round)'
set_fig max_ready_sandboxes node '.capacity.measured.ready_at_once'
keys=(acquire_warm_p50_ms acquire_warm_p99_ms cold_start_s wake_l1_s wake_l2_s checkpoint_s
	checkpoint_state_mb checkpoint_rootfs_delta_mb fork4_s proxy_vs_nginx_rps_ratio proxy_p99_ms
	nginx_p99_ms mcp_shell_call_p50_ms mcp_screenshot_p50_ms mcp_snapshot_p50_ms
	idle_sandbox_mem_mb max_ready_sandboxes)

# What each figure is, its target (from the issues and docs), and its unit.
declare -A WHAT TARGET
WHAT[acquire_warm_p50_ms]="acquire from a warm pool, p50 (HTTP, client side)"
WHAT[acquire_warm_p99_ms]="acquire from a warm pool, p99"
WHAT[cold_start_s]="cold create to ready (desktop, node agent)"
WHAT[wake_l1_s]="wake from the node's disk (L1) to the first MCP answer"
WHAT[wake_l2_s]="wake from S3 (L2, template present) to the first MCP answer"
WHAT[checkpoint_s]="hibernate request (drain, census, checkpoint, snapshot)"
WHAT[checkpoint_state_mb]="checkpoint state image in S3 (zstd)"
WHAT[checkpoint_rootfs_delta_mb]="rootfs delta in S3 (btrfs send -p, zstd; the bench writes two small files: under 1 KiB)"
WHAT[fork4_s]="fork into 4, to four ready children"
WHAT[proxy_vs_nginx_rps_ratio]="cloche-proxy requests/s over nginx's, same upstream"
WHAT[proxy_p99_ms]="cloche-proxy p99 latency (small responses, 64 connections)"
WHAT[nginx_p99_ms]="nginx p99 latency (same load)"
WHAT[mcp_shell_call_p50_ms]="mcp-shell run_command round trip, p50 (in gVisor)"
WHAT[mcp_screenshot_p50_ms]="mcp-desktop screenshot (1280x800 PNG), p50"
WHAT[mcp_snapshot_p50_ms]="mcp-browser browser_snapshot, p50"
WHAT[idle_sandbox_mem_mb]="idle desktop sandbox: PSS of its host processes (MB)"
WHAT[max_ready_sandboxes]="desktop sandboxes ready at once on this machine (2 GiB kept free)"
TARGET[wake_l1_s]="<= 0.5"
TARGET[wake_l2_s]="<= 2"
TARGET[checkpoint_state_mb]="<= 40"
TARGET[checkpoint_rootfs_delta_mb]="<= 5"
TARGET[fork4_s]="<= 2"
TARGET[proxy_vs_nginx_rps_ratio]=">= 1"
TARGET[acquire_warm_p50_ms]="< 100"

reasons='{}'
for k in "${keys[@]}"; do
	if [[ ${V[$k]} == null ]]; then
		r=$(why "${SRC[$k]}")
		[[ $k == max_ready_sandboxes && -s $R/node.json ]] &&
			r="not measured: bench/node.sh ran without its capacity fill (NODE_BENCH_FILL=0)"
		reasons=$(jq -c --arg k "$k" --arg r "$r" '. + {($k): $r}' <<<"$reasons")
	fi
done

when=$(date -u +%FT%TZ)
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
mem_gib=$(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo)
runsc_v=$(runsc --version 2>/dev/null | head -n 1 || true)
machine=$(jq -nc --arg cpu "$cpu" --argjson n "$(nproc)" --argjson mem "$mem_gib" --arg k "$(uname -r)" \
	--arg os "$(. /etc/os-release && echo "$PRETTY_NAME")" --arg runsc "$runsc_v" \
	'{cpu: $cpu, cores: $n, memory_gib: $mem, kernel: $k, os: $os, runsc: $runsc}')
args=()
for k in "${keys[@]}"; do args+=(--argjson "$k" "${V[$k]}"); done
jq -n "${args[@]}" --argjson reasons "$reasons" --argjson machine "$machine" --arg when "$when" \
	--argjson total "${BENCH_TOTAL_S:-null}" --argjson quick "$([[ ${BENCH_QUICK:-0} == 1 ]] && echo true || echo false)" \
	"{$(for k in "${keys[@]}"; do printf '%s: $%s, ' "$k" "$k"; done) reasons: \$reasons, measured_at: \$when, machine: \$machine,
	  bench_seconds: \$total, quick: \$quick}" >bench/results.json
echo "wrote bench/results.json"

# --- charts -------------------------------------------------------------------
# cdf FILE: sorted samples on stdin -> "value percentile" lines.
cdf() { sort -n | awk '{v[NR] = $1} END {for (i = 1; i <= NR; i++) print v[i], 100 * i / NR}' >"$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
samples() { # FILE FILTER -> one number a line
	[[ -s $R/$1.json ]] && jq -r "($2 // [])[]" "$R/$1.json" 2>/dev/null || true
}
plot_cdf() { # PNG TITLE XLABEL LOGX then pairs of "datafile label"
	local png=$1 title=$2 xl=$3 logx=$4 cmd="" sep="" key="bottom right"
	[[ $logx == 1 ]] && key="top left"
	shift 4
	while (($#)); do
		[[ -s $1 ]] && { cmd+="$sep'$1' using 1:2 with steps lw 2 title '$2'"; sep=", "; }
		shift 2
	done
	[[ -n $cmd ]] || { echo "no samples for $png"; return 0; }
	gnuplot <<-EOF
		set terminal pngcairo size 900,480 font 'sans,10' noenhanced
		set output '$png'
		set title '$title'
		set xlabel '$xl'
		set ylabel 'percent of calls at or below'
		set yrange [0:100]
		set grid
		set key $key
		$([[ $logx == 1 ]] && echo "set logscale x")
		plot $cmd
	EOF
}
samples portal '.warm_acquire.samples_ms' | cdf "$tmp/acq"
plot_cdf bench/charts/acquire.png "acquire from a warm pool (ms, client side)" "ms" 0 "$tmp/acq" "warm acquire"
samples mcp '.shell.run_command_true.samples_ms' | cdf "$tmp/sh"
samples mcp-desktop '.screenshot.samples_ms' | cdf "$tmp/ss"
samples mcp-browser '.samples_ms' | cdf "$tmp/sn"
plot_cdf bench/charts/mcp.png "MCP tool calls inside a sandbox (ms)" "ms (log scale)" 1 \
	"$tmp/sh" "mcp-shell run_command" "$tmp/ss" "mcp-desktop screenshot" "$tmp/sn" "mcp-browser snapshot"
samples hibernate '.wake1.samples' | cdf "$tmp/w1"
samples hibernate '.wake2.samples' | cdf "$tmp/w2"
samples hibernate '.ckpt.samples' | cdf "$tmp/ck"
samples hibernate '.fork.samples' | cdf "$tmp/fk"
plot_cdf bench/charts/wake.png "hibernation: every round (ms)" "ms" 0 \
	"$tmp/w1" "wake L1 to first MCP answer" "$tmp/w2" "wake L2 (S3)" "$tmp/ck" "hibernate" "$tmp/fk" "fork into 4"

# --- RESULTS.md ---------------------------------------------------------------
{
	echo "# Benchmark results"
	echo
	echo "Written by \`make bench\` (bench/report.sh) on $when$([[ ${BENCH_QUICK:-0} == 1 ]] && echo ", in quick mode (fewer rounds: rough figures)")."
	echo "Every figure is measured on this machine by the benchmark named beside it; the raw"
	echo "figures of a run are in \`bench/results/*.json\` (not kept in git) and docs/benchmarks.md says what each means."
	echo
	echo "Machine: $(jq -r '"\(.cpu), \(.cores) cores, \(.memory_gib) GiB, \(.os), kernel \(.kernel), \(.runsc)"' <<<"$machine")."
	[[ -n ${BENCH_TOTAL_S:-} ]] && echo "All benchmarks took $((BENCH_TOTAL_S / 60)) min $((BENCH_TOTAL_S % 60)) s, one after the other (figures swing with the machine's load: run it on an otherwise idle machine)."
	[[ -z ${BENCH_NOTE:-} ]] || echo "$BENCH_NOTE"
	echo
	echo "| key | figure | value | target | from |"
	echo "|---|---|---|---|---|"
	for k in "${keys[@]}"; do
		v=${V[$k]}
		[[ $v == null ]] && v="n/a ($(jq -r --arg k "$k" '.[$k]' <<<"$reasons"))"
		echo "| \`$k\` | ${WHAT[$k]} | $v | ${TARGET[$k]:-} | bench/${SRC[$k]}.sh |"
	done
	echo
	echo "## Latency distributions"
	echo
	for c in acquire wake mcp; do
		[[ -s bench/charts/$c.png ]] && echo "![$c](charts/$c.png)" && echo
	done
	echo "Each chart is a cumulative distribution: a point (x, y) says y percent of the calls took"
	echo "x or less. Hibernation has one sample per round."
} >bench/RESULTS.md
echo "wrote bench/RESULTS.md"
