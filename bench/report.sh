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
R=${BENCH_RESULTS_DIR:-bench/results} # where the benchmarks wrote (another directory: to redo a report)
command -v gnuplot >/dev/null || { echo "bench/report.sh: gnuplot is missing (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p bench/charts

# j FILE FILTER: the filter's value in bench/results/FILE.json, or null.
j() { [[ -s $R/$1.json ]] && jq -c "($2) // null" "$R/$1.json" 2>/dev/null || echo null; }
# why FILE: the reason a figure of FILE is missing.
why() {
	if [[ " ${BENCH_FAILED:-} " == *" $1 "* ]]; then
		echo "bench/$1.sh failed in this run (bench/results/bench.log)"
	elif [[ -s $R/$1.json ]]; then
		echo "bench/$1.sh did not report it"
	else
		echo "bench/$1.sh has not run (no $R/$1.json)"
	fi
}

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
# (the delta's samples are bytes; results of before 2026-11-23 15:00 have KiB)
set_fig checkpoint_rootfs_delta_mb hibernate \
	'(.rootfs.median * (if .rootfs.unit == "KiB" then 1024 else 1 end) / 1e6 * 1e6 | round / 1e6)'
set_fig fork4_s hibernate '(.fork.median / 1000 * 100 | round / 100)'
set_fig proxy_vs_nginx_rps_ratio proxy '.small.rps_ratio'
set_fig proxy_p99_ms proxy '.small.cloche.p99_ms'
set_fig nginx_p99_ms proxy '.small.nginx.p99_ms'
set_fig mcp_shell_call_p50_ms mcp '.shell_run_command_p50_ms'
set_fig mcp_screenshot_p50_ms mcp-desktop '.screenshot_p50_ms'
set_fig mcp_snapshot_p50_ms mcp-browser '.p50_ms'
set_fig browser_snapshot_ratio_median browser-pages '.summary.ratio_median'
set_fig browser_snapshot_ratio_total browser-pages '.summary.ratio_total'
set_fig browser_sentences_unreachable browser-pages '.summary.unreachable_ours'
set_fig browser_snapshot_slowest_ms browser-pages '.summary.ours_snapshot_ms_max'
set_fig novnc_scroll_fps novnc '.scroll_fps'
set_fig novnc_scroll_mbit_s novnc '(.scroll_mbit_s * 10 | round / 10)'
set_fig novnc_idle_kbit_s novnc '.idle_kbit_s'
set_fig novnc_vnc_cpu_pct novnc '.scroll_cpu_pct.cloche_vnc'
set_fig novnc_viewer_cpu_pct novnc '.scroll_cpu_pct.viewer_chromium'
set_fig idle_sandbox_mem_mb node '((.memory.sentry_pss_mib + .memory.gofer_pss_mib) * 1.048576 | round)'
# Only a fill that memory or the agent stopped measures the most; one that
# stopped at its cap or time budget gives a lower bound (null, and why).
set_fig max_ready_sandboxes node '.capacity.measured | select(. != null and (.stopped_by // "cap") != "cap"
	and .stopped_by != "time" and (.stopped_because | startswith("reached") | not)) | .ready_at_once'
keys=(acquire_warm_p50_ms acquire_warm_p99_ms cold_start_s wake_l1_s wake_l2_s checkpoint_s
	checkpoint_state_mb checkpoint_rootfs_delta_mb fork4_s proxy_vs_nginx_rps_ratio proxy_p99_ms
	nginx_p99_ms mcp_shell_call_p50_ms mcp_screenshot_p50_ms mcp_snapshot_p50_ms
	browser_snapshot_ratio_median browser_snapshot_ratio_total browser_sentences_unreachable
	browser_snapshot_slowest_ms novnc_scroll_fps novnc_scroll_mbit_s novnc_idle_kbit_s novnc_vnc_cpu_pct
	novnc_viewer_cpu_pct idle_sandbox_mem_mb max_ready_sandboxes)

# What each figure is, its target (from the issues and docs), and its unit.
declare -A WHAT TARGET
WHAT[acquire_warm_p50_ms]="acquire from a warm pool, p50 (HTTP, client side)"
WHAT[acquire_warm_p99_ms]="acquire from a warm pool, p99"
WHAT[cold_start_s]="cold create to ready (desktop, node agent)"
WHAT[wake_l1_s]="wake from the node's disk (L1) to the first MCP answer"
WHAT[wake_l2_s]="wake from S3 (L2, template present) to the first MCP answer"
WHAT[checkpoint_s]="hibernate request (drain, census, checkpoint, snapshot)"
WHAT[checkpoint_state_mb]="checkpoint state image in S3 (zstd)"
WHAT[checkpoint_rootfs_delta_mb]="rootfs delta in S3 (btrfs send -p, zstd; the bench writes two small files)"
WHAT[fork4_s]="fork into 4, to four ready children"
WHAT[proxy_vs_nginx_rps_ratio]="cloche-proxy requests/s over nginx's, same upstream"
WHAT[proxy_p99_ms]="cloche-proxy p99 latency (small responses, 64 connections)"
WHAT[nginx_p99_ms]="nginx p99 latency (same load)"
WHAT[mcp_shell_call_p50_ms]="mcp-shell run_command round trip, p50 (in gVisor)"
WHAT[mcp_screenshot_p50_ms]="mcp-desktop screenshot (1280x800 PNG), p50"
WHAT[mcp_snapshot_p50_ms]="mcp-browser browser_snapshot, p50"
WHAT[browser_snapshot_ratio_median]="mcp-browser's snapshot over playwright-mcp's in characters, same content, median of the pages (headless, host)"
WHAT[browser_snapshot_ratio_total]="the same, total: the pages' characters summed, ours over theirs"
WHAT[browser_sentences_unreachable]="pages whose deep sentence mcp-browser cannot reach (snapshot, continuation, browser_find)"
WHAT[browser_snapshot_slowest_ms]="mcp-browser browser_snapshot on the slowest page, median (headless, host)"
WHAT[novnc_scroll_fps]="noVNC viewer, a page scrolling on the 1280x800 desktop: frames drawn per second (host, headless Chromium)"
WHAT[novnc_scroll_mbit_s]="the same: WebSocket bandwidth, Mbit/s (H.264 in WebCodecs: about 3-4 for 1080p at 30 fps)"
WHAT[novnc_idle_kbit_s]="noVNC viewer, idle screen: WebSocket bandwidth, kbit/s"
WHAT[novnc_vnc_cpu_pct]="cloche-vnc CPU while the page scrolls, % of one core"
WHAT[novnc_viewer_cpu_pct]="the viewer's Chromium (noVNC decoding and drawing) CPU while the page scrolls, % of one core"
WHAT[idle_sandbox_mem_mb]="idle desktop sandbox: PSS of its host processes (MB)"
WHAT[max_ready_sandboxes]="desktop sandboxes ready at once on this machine, added until MemAvailable would fall below 2 GiB or the agent refuses"
TARGET[wake_l1_s]="<= 0.5"
TARGET[wake_l2_s]="<= 2"
TARGET[checkpoint_state_mb]="<= 40"
TARGET[checkpoint_rootfs_delta_mb]="<= 5"
TARGET[fork4_s]="<= 2"
TARGET[proxy_vs_nginx_rps_ratio]=">= 1"
TARGET[acquire_warm_p50_ms]="<= 10"
TARGET[browser_snapshot_ratio_median]="<= 0.5"
TARGET[browser_snapshot_ratio_total]="<= 0.5"
TARGET[browser_sentences_unreachable]="0"
TARGET[acquire_warm_p99_ms]="<= 50"

reasons='{}'
for k in "${keys[@]}"; do
	if [[ ${V[$k]} == null ]]; then
		r=$(why "${SRC[$k]}")
		if [[ $k == max_ready_sandboxes && -s $R/node.json ]]; then
			r=$(jq -r '.capacity.measured | if . == null
				then "not measured: bench/node.sh ran without its capacity fill (NODE_BENCH_FILL=0)"
				else "at least \(.ready_at_once): the fill stopped before memory or the agent did (\(.stopped_because))" end' \
				"$R/node.json")
		fi
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
# When each results file was written (a partial run keeps older ones), and
# the load average at each benchmark's start ("boot 0.12,node 0.40,...").
# (a missing file is skipped, not a failed loop: the last one decides the
# loop's status, and pipefail would end the report there)
sources=$(for f in $(printf '%s\n' "${SRC[@]}" | sort -u); do
	[[ -s $R/$f.json ]] || continue
	jq -c --arg f "$f" --arg t "$(date -u -r "$R/$f.json" +%FT%TZ)" \
		'{($f): (.at // .when // .measured_at // .shell.at // $t)}' "$R/$f.json"
done | jq -sc 'add // {}')
load=$(tr ',' '\n' <<<"${BENCH_LOAD:-}" | awk 'NF == 2 {printf "%s\"%s\": %s", (n++ ? ", " : "{"), $1, $2} END {print n ? "}" : "null"}')
args=()
for k in "${keys[@]}"; do args+=(--argjson "$k" "${V[$k]}"); done
jq -n "${args[@]}" --argjson reasons "$reasons" --argjson machine "$machine" --arg when "$when" \
	--argjson sources "$sources" --argjson load "$load" \
	--argjson total "${BENCH_TOTAL_S:-null}" --argjson quick "$([[ ${BENCH_QUICK:-0} == 1 ]] && echo true || echo false)" \
	"{$(for k in "${keys[@]}"; do printf '%s: $%s, ' "$k" "$k"; done) reasons: \$reasons, measured_at: \$when, machine: \$machine,
	  bench_seconds: \$total, quick: \$quick, results_written: \$sources, load_average_at_start: \$load}" >bench/results.json
echo "wrote bench/results.json"

# --- charts -------------------------------------------------------------------
# cdf FILE: sorted samples on stdin -> "value percentile" lines.
cdf() { sort -n | awk '{v[NR] = $1} END {if (NR) print v[1], 0; for (i = 1; i <= NR; i++) print v[i], 100 * i / NR}' >"$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
samples() { # FILE FILTER -> one number a line
	[[ -s $R/$1.json ]] && jq -r "($2 // [])[]" "$R/$1.json" 2>/dev/null || true
}
plot_cdf() { # PNG TITLE XLABEL LOGX then pairs of "datafile label"
	local png=$1 title=$2 xl=$3 logx=$4 cmd="" sep=""
	shift 4
	while (($#)); do
		[[ -s $1 ]] && { cmd+="$sep'$1' using 1:2 with steps lw 2 title '$2 (n=$(($(wc -l <"$1") - 1)))'"; sep=", "; }
		shift 2
	done
	[[ -n $cmd ]] || { echo "no samples for $png"; return 0; }
	gnuplot <<-EOF
		set terminal pngcairo size 900,540 font 'sans,10' noenhanced
		set output '$png'
		set title '$title'
		set xlabel '$xl'
		set ylabel 'percent of calls at or below'
		set yrange [0:100]
		set grid
		set key below
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
plot_cdf bench/charts/wake.png "hibernation: every checkpoint, wake and fork (ms)" "ms" 0 \
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
	[[ $load == null ]] || echo "Load average (1 min) at each benchmark's start: $(jq -r 'to_entries | map("\(.key) \(.value)") | join(", ")' <<<"$load")."
	[[ -z ${BENCH_NOTE:-} ]] || echo "$BENCH_NOTE"
	[[ -z ${BENCH_FAILED:-} ]] || echo "**Failed in this run: ${BENCH_FAILED}** (their figures are n/a below)."
	echo "Results files used: $(jq -r 'to_entries | map("\(.key) \(.value)") | join(", ")' <<<"$sources")."
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
	echo "x or less; n is the number of samples."
	if [[ -s $R/node.json ]] && jq -e '.capacity.measured != null' "$R/node.json" >/dev/null; then
		echo
		echo "## Capacity"
		echo
		jq -r --argjson v "${V[max_ready_sandboxes]}" '.capacity as $c | $c.measured as $m |
			"The capacity fill of bench/node.sh had \($m.ready_at_once) desktops ready at once" +
			(if $m.fill_s then " after \($m.fill_s) s" else "" end) +
			(if $m.by == "fork" then ", added as forks of an idle desktop, 8 at a time (each a whole sandbox restored from the same checkpoint)"
			 else ", created one at a time" end) +
			"; it stopped because: \($m.stopped_because)" +
			(if $v == null then " (so that is a lower bound, and `max_ready_sandboxes` is n/a)" else "" end) +
			". With all of them idle the host had \($m.mem_available_mib) MiB available and \($m.host_busy_cores) of \(.host.cpus) cores busy" +
			(if $m.mem_available_drop_per_sandbox_mib then "; each added desktop took \($m.mem_available_drop_per_sandbox_mib) MiB of MemAvailable" else "" end) +
			" (an idle booted one: \(.memory.host_available_drop_mib) MiB of MemAvailable, PSS \(.memory.sentry_pss_mib + .memory.gofer_pss_mib | floor) MiB). " +
			"Projected from \(.memory.m) idle booted desktops: \($c.projected_by_memory) by memory, \($c.projected_by_cpu) by CPU."' "$R/node.json"
	fi
	if [[ -s $R/browser-pages.json ]]; then
		echo
		echo "## Browser pages: mcp-browser and playwright-mcp"
		echo
		# One row a page; a * marks a snapshot cut at the server's budget.
		jq -r 'def n: if . == null then "-" else tostring end;
			def how: if .ours.error then "failed" else
				[ (if .ours.reach.direct then "direct" else empty end),
				  (.ours.reach.continuation | select(. != null and .reached and .calls_to_sentence > 0) | "continuation (\(.calls_to_sentence) calls)"),
				  (.ours.reach.find | select(. != null and .reached) | "browser_find") ]
				| if length == 0 then "**no**" else join(", ") end end;
			def pw(f): if .playwright.error then "-" else f end;
			"bench/browser-pages.sh, \(.measured_at), \(.snapshots_per_page) snapshots a page (the first a warm-up), " +
			"@playwright/mcp \(.versions.playwright_mcp), Chromium \(.versions.chromium), both headless on the host; load average \(.load_average.start) at the start. " +
			"Characters of one browser_snapshot answer (* cut by the server); the ratio compares the same content: the whole page, " +
			"or the part mcp-browser showed before its cut (its answers until the sentence showed), located in playwright-mcp'"'"'s whole snapshot.",
			"",
			"| page | package | characters: ours / playwright-mcp | ratio, same content | ms per snapshot | navigate ms | refs | sentence: ours | playwright-mcp |",
			"|---|---|---|---|---|---|---|---|---|",
			(.pages[] | if .ours.error then
				"| \(.name) | \(.package) | mcp-browser failed: \(.ours.error | .[:120]) | | | | | | |"
			 else
				"| \(.name) | \(.package) | \(.ours.snapshot_chars)\(if .ours.cut then "*" else "" end) / \(pw("\(.playwright.snapshot_chars)\(if .playwright.cut then "*" else "" end)")) | " +
				"\(.ratio | n) (\(.ratio_basis // "-")) | \(.ours.snapshot_ms_median) / \(pw(.playwright.snapshot_ms_median | n)) | " +
				"\(.ours.navigate_ms) / \(pw(.playwright.navigate_ms | n)) | \(.ours.refs) / \(pw(.playwright.refs | n)) | \(how) | " +
				"\(if .playwright.error then "failed: \(.playwright.error | gsub("[\\s|]+"; " ") | .[:80])" elif .playwright.direct then "direct" else "**no**" end) |"
			 end),
			"",
			(.summary | "Size ratio for the same content over \(.pages_rated) pages: median \(.ratio_median | n), total \(.ratio_total | n) " +
			 "(whole pages only, \(.pages_whole): median \(.ratio_median_whole | n), total \(.ratio_total_whole | n)); one answer against one answer, median \(.ratio_one_answer_median | n). " +
			 "Sentences reachable: mcp-browser \(.reachable_ours)/\(.sentences), playwright-mcp \(.reachable_playwright)/\(.sentences).")' \
			"$R/browser-pages.json"
	fi
	if [[ -s $R/novnc.json ]]; then
		echo
		echo "## What a person watching through noVNC gets"
		echo
		# One row a measured window; CPU in % of one core.
		jq -r 'def n: if . == null then "-" else tostring end;
			"bench/novnc.sh, \(.measured_at): Xvfb \(.display), cloche-vnc, Chromium on the desktop scrolling an article by \(.scroll_px_per_frame) px a frame, " +
			"noVNC \(.versions.novnc) (JPEG quality \(.novnc_quality // 6)) from cloche-vnc'"'"'s web port in headless Chromium at 1:1, all on the host; load average \(.load_average.start) at the start. " +
			"fps: updates that reached noVNC'"'"'s canvas; Mbit/s: WebSocket payload, server to viewer; CPU in % of one core.",
			"",
			"| window | s | fps (desktop drew) | gap p95 ms | Mbit/s | cloche-vnc | Xvfb | desktop Chromium | viewer Chromium | machine busy cores |",
			"|---|---|---|---|---|---|---|---|---|---|",
			(.phases[] | "| \(.name) | \(.seconds) | \(.fps) (\(.desktop_fps)) | \(.gap_ms.p95 | n) | \(.mbit_s) | \(.cpu_pct.cloche_vnc) | \(.cpu_pct.xvfb) | " +
				"\(.cpu_pct.desktop_chromium) | \(.cpu_pct.viewer_chromium) | \(.machine_busy_cores) |"),
			"",
			"For comparison, H.264 through WebCodecs streams 1080p at 30 fps in about 3-4 Mbit/s."' "$R/novnc.json"
	fi
} >bench/RESULTS.md
echo "wrote bench/RESULTS.md"
