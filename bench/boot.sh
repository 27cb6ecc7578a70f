#!/usr/bin/env bash
# Benchmark: cold boot of the desktop template under runsc (runsc run ->
# health ready, each on a fresh snapshot and netns pair), then the idle CPU
# and memory of one booted sandbox.  Prints a table and writes
# bench/results/boot.json.
#
#   BENCH_BOOTS (3)  BENCH_SETTLE_S (15)  BENCH_IDLE_S (20)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

boots=${BENCH_BOOTS:-3}
settle=${BENCH_SETTLE_S:-15}
idle=${BENCH_IDLE_S:-20}
bench_template
ids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { for i in "${ids[@]}"; do sb_down "$i" >/dev/null 2>&1; done; sb_agent_stop; }
trap cleanup EXIT

# PIDs of every host process that makes up sandbox $1: the sentry
# (runsc-sandbox) and gofer, found by their bundle path, and all their
# descendants (under the ptrace platform every application process has a
# stub process on the host, and application memory is mapped into them).
sandbox_pids() {
	local roots p kids
	roots=$(pgrep -f -- "[r]unsc-(sandbox|gofer) .*--bundle[ =]$(sb_dir "$1")/bundle( |$)")
	for p in $roots; do
		echo "$p"
		kids=$p
		while [[ -n $kids ]]; do
			kids=$(for k in $kids; do pgrep -P "$k"; done)
			[[ -z $kids ]] || echo "$kids"
		done
	done
}
# Sum of utime+stime clock ticks over those processes (and reaped children).
cpu_ticks() {
	local t=0 p f
	for p in $(sandbox_pids "$1"); do
		f=$(cut -d' ' -f14-17 "/proc/$p/stat" 2>/dev/null) || continue
		read -r u s cu cs <<<"$f"
		t=$((t + u + s + cu + cs))
	done
	echo "$t"
}
# Sum of a smaps_rollup field (kB) over the sandbox's processes.
mem_kb() {
	local sum=0 p v
	for p in $(sandbox_pids "$1"); do
		v=$(awk -v k="$2:" '$1 == k {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

times=()
sb_agent_ensure || exit 1 # before the clock starts
for ((n = 1; n <= boots; n++)); do
	id="bench-boot-$$-$n"
	ids+=("$id")
	t0=$(now_ms)
	sb_up "$id" "$template" || exit 1
	sb_wait_ready "$id" 180 || exit 1
	t=$(($(now_ms) - t0))
	times+=("$t")
	echo "boot $n: create (cloche-node) -> health ready: $t ms (services: $(sb_health "$id" | jq -c '[.services | to_entries[] | {(.key): .value.ready_ms}] | add'))"
	if ((n < boots)); then sb_down "$id"; fi
done

id=${ids[-1]}
sleep "$settle"
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks "$id")
sleep "$idle"
c1=$(cpu_ticks "$id")
cpu_pct=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$idle" 'BEGIN {printf "%.2f", 100 * d / hz / s}')
rss=$(mem_kb "$id" Rss)
pss=$(mem_kb "$id" Pss)
procs=$(sandbox_pids "$id" | wc -l)
# What the machine gets back when the idle sandbox goes: MemAvailable
# before and after tearing it down.
avail_with=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
sb_down "$id"
sleep 2
avail_without=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
grew=$(( (avail_without - avail_with) / 1024 ))

sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(sed -n "$(((boots + 1) / 2))p" <<<"$sorted")
printf '\n%-44s %s\n' "cold boot, runsc run -> health ready" "median $median ms (min $(head -1 <<<"$sorted"), max $(tail -1 <<<"$sorted"), n=$boots)"
printf '%-44s %s\n' "idle CPU of one sandbox (${idle}s window)" "$cpu_pct % of one core"
printf '%-44s %s\n' "memory of one idle sandbox ($procs host procs)" "PSS $((pss / 1024)) MiB, RSS $((rss / 1024)) MiB"
printf '%-44s %s\n' "MemAvailable regained when it is destroyed" "$grew MiB"

jq -n --argjson times "[$(IFS=,; echo "${times[*]}")]" --arg median "$median" --arg cpu "$cpu_pct" \
	--arg pss "$pss" --arg rss "$rss" --arg grew "$grew" --arg procs "$procs" --arg tmpl "$(basename "$template")" \
	--arg at "$(date -u +%FT%TZ)" '{
	bench: "boot", at: $at, template: $tmpl, boot_ms: $times, boot_ms_median: ($median | tonumber),
	idle_cpu_pct_of_core: ($cpu | tonumber), idle_pss_kib: ($pss | tonumber), idle_rss_kib: ($rss | tonumber),
	mem_available_regained_mib: ($grew | tonumber), host_processes: ($procs | tonumber)}' >bench/results/boot.json
echo "wrote bench/results/boot.json"
