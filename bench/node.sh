#!/usr/bin/env bash
# Benchmark: the node agent (cloche-node) through its API, on this machine.
#   1. cold create-to-ready: NODE_BENCH_COLD (5) sequential creates, then
#      their destroys;
#   2. warm pool: cloche-node with --warm-pool desktop=NODE_BENCH_WARM (3);
#      once the pool is full, claim every member at once (POST {}), time the
#      claims and the refill back to full;
#   3. memory of an idle sandbox: NODE_BENCH_MEM (3) sandboxes left idle for
#      NODE_BENCH_SETTLE_S (20 s): PSS of the sentry (runsc-sandbox and its
#      ptrace stubs) and of the gofer, what the guest uses (MemTotal -
#      MemAvailable inside), how much the host's MemAvailable dropped, and
#      the idle CPU of a sandbox (/proc/stat, and its cpuacct cgroup);
#   4. capacity: the projection from 3 (usable memory / memory per sandbox
#      against cores / idle CPU per sandbox: which binds first) and, with
#      NODE_BENCH_FILL=N (0 = skip), a measurement: desktops are added until
#      MemAvailable would fall below NODE_BENCH_RESERVE_MIB (2048), the agent
#      refuses or fails one, N are up or NODE_BENCH_FILL_BUDGET_S (600) have
#      passed; then how many are ready at once and the host CPU load with all
#      of them idle.  NODE_BENCH_FILL_BY=fork (default) adds them as forks
#      of an idle one, NODE_BENCH_FILL_BATCH (8) per fork; =boot creates
#      them one at a time (slow: each boot is seconds of CPU).
# Prints a table and writes bench/results/node.json.
#
#   NODE_BENCH_PORT (a free one)  NODE_BENCH_CPU_S (10, each /proc/stat window)
#   NODE_BENCH_HOLD_CLAIMED (0: claimed warm sandboxes are destroyed at once,
#     overlapping the refill; 1: they stay up until the pool is full again)
#   CLOCHE_BUILD (build)  CLOCHE_POOL (/var/lib/cloche)  CLOCHE_TEMPLATE
#
# cloche-node runs once per machine and pool: it refuses to start while
# another agent holds the pool, and at start it re-adopts every running
# sandbox of the pool, tears down the other entries of POOL/sandboxes and
# every container of its runsc root that has no directory there.  So this
# bench refuses to start while another agent runs, or while the pool holds
# entries that are not running (a create in progress elsewhere, a dead
# sandbox someone is looking at) unless NODE_BENCH_FORCE=1.  Running
# sandboxes of others are adopted and left alone, but they skew the figures.
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

cold_n=${NODE_BENCH_COLD:-5}
warm_k=${NODE_BENCH_WARM:-3}
mem_m=${NODE_BENCH_MEM:-3}
fill_max=${NODE_BENCH_FILL:-0}
fill_by=${NODE_BENCH_FILL_BY:-fork}
fill_batch=${NODE_BENCH_FILL_BATCH:-8}
fill_budget=${NODE_BENCH_FILL_BUDGET_S:-600}
settle=${NODE_BENCH_SETTLE_S:-20}
cpu_s=${NODE_BENCH_CPU_S:-10}
reserve_mib=${NODE_BENCH_RESERVE_MIB:-2048}
hold_claimed=${NODE_BENCH_HOLD_CLAIMED:-0}
bin=${CLOCHE_BUILD:-build}/bin/cloche-node
out=bench/results/node.json

for v in cold_n warm_k mem_m fill_max fill_batch fill_budget settle cpu_s reserve_mib; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number (got \`${!v}\`)"
done
((cold_n >= 1 && warm_k >= 1 && mem_m >= 1 && cpu_s >= 1)) ||
	die "NODE_BENCH_COLD, NODE_BENCH_WARM, NODE_BENCH_MEM and NODE_BENCH_CPU_S must be at least 1"
[[ $fill_by == fork || $fill_by == boot ]] || die "NODE_BENCH_FILL_BY is fork or boot (got \`$fill_by\`)"
((fill_batch >= 1 && fill_batch <= 8)) || die "NODE_BENCH_FILL_BATCH is 1-8 (a fork makes at most 8 children)"
((EUID == 0)) || die "run as root (cloche-node makes netns, btrfs snapshots and runsc sandboxes)"
[[ -x $bin ]] || die "$bin is missing: run \`make all template\` first"
for c in curl jq nsenter runsc btrfs ip setsid flock ss; do
	command -v "$c" >/dev/null || die "\`$c\` is not installed (scripts/install-deps.sh)"
done
newest=$(sb_latest_template desktop)
[[ -n $newest ]] || die "no desktop template in $CLOCHE_POOL/templates: run \`make all template\` first"
template=${CLOCHE_TEMPLATE:-$newest}
[[ -d $template ]] || die "template \`$template\` does not exist: run \`make template\`"
tname=$(basename "$template")
[[ $tname == desktop@* ]] || die "template \`$tname\` is not a desktop@<digest> template"
[[ $tname == "$(basename "$newest")" ]] ||
	echo "note: cold creates use $tname, the warm pool uses the newest, $(basename "$newest")" >&2

# --- what a starting cloche-node would tear down -----------------------------
alive_pid() { # state-file PID that is a live runsc-sandbox process
	[[ -n $1 && $1 != null && -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q runsc-sandbox
}
sandbox_pid() { jq -r '.sandbox.pid // empty' "$CLOCHE_RUNSC_ROOT/$1_sandbox:$1.state" 2>/dev/null; }
gofer_pid() { jq -r '.goferPid // empty' "$CLOCHE_RUNSC_ROOT/$1_sandbox:$1.state" 2>/dev/null; }
preflight() {
	local d id doomed=()
	for d in "$CLOCHE_POOL"/sandboxes/*; do
		[[ -d $d ]] || continue
		id=$(basename "$d")
		alive_pid "$(sandbox_pid "$id")" || doomed+=("$id")
	done
	for d in /var/run/netns/S-* /var/run/netns/R-*; do
		[[ -e $d ]] || continue
		id=${d##*/?-}
		[[ -d $CLOCHE_POOL/sandboxes/$id ]] || doomed+=("netns ${d##*/}")
	done
	for d in "$CLOCHE_RUNSC_ROOT"/*_sandbox:*.state; do
		[[ -e $d ]] || continue
		id=${d##*/}
		id=${id%%_sandbox:*}
		[[ -d $CLOCHE_POOL/sandboxes/$id ]] || doomed+=("container $id")
	done
	((${#doomed[@]} == 0)) && return 0
	echo "bench/node.sh: starting cloche-node would tear down what is not running or has no" >&2
	echo "  directory in $CLOCHE_POOL/sandboxes: $(printf '%s\n' "${doomed[@]}" | sort -u | tr '\n' ' ')" >&2
	if [[ ${NODE_BENCH_FORCE:-0} == 1 ]]; then
		echo "  NODE_BENCH_FORCE=1: going on anyway" >&2
		return 0
	fi
	echo "  (a create in progress elsewhere, or a dead sandbox someone is looking at)." >&2
	echo "  Wait, clean them up, or set NODE_BENCH_FORCE=1." >&2
	exit 1
}
# One agent per pool (it holds an flock on POOL/.cloche-node.lock).
if [[ -e $CLOCHE_POOL/.cloche-node.lock ]] && ! flock -n "$CLOCHE_POOL/.cloche-node.lock" true; then
	die "another cloche-node (pid $(head -c 16 "$CLOCHE_POOL/.cloche-node.lock" | tr -d '\n')) serves $CLOCHE_POOL; this bench runs its own agent: stop that one first"
fi
preflight

# --- the agent -------------------------------------------------------------
work=$(mktemp -d /tmp/bench-node.XXXXXX)
head -c 32 /dev/urandom | base64 >"$work/cred"
cred=$(cat "$work/cred")
port=${NODE_BENCH_PORT:-$(free_port)}
base="http://127.0.0.1:$port"
node_pid=
node_kind=
pre="bn-$$"
: >"$work/mine"    # ids of every sandbox this run made (or claimed)
: >"$work/foreign" # ids the agent already knew when it started

# start_node [warm-pool spec]: runs cloche-node in its own session (so a
# Ctrl-C in the terminal reaches only this script, which then still has an
# agent to clean up through) and waits for /healthz.
start_node() {
	local i
	env -u CLOCHE_NODE_WARM_POOL -u CLOCHE_NODE_PORT -u CLOCHE_NODE_POOL setsid "$bin" \
		--port "$port" --credential-file "$work/cred" --pool "$CLOCHE_POOL" \
		--runsc-root "$CLOCHE_RUNSC_ROOT" ${1:+--warm-pool "$1"} >>"$work/node.log" 2>&1 </dev/null &
	node_pid=$!
	node_kind=${1:+warm}
	node_kind=${node_kind:-plain}
	for ((i = 0; i < 1200; i++)); do
		if ! kill -0 "$node_pid" 2>/dev/null; then
			node_pid=
			tail -n 5 "$work/node.log" >&2
			die "cloche-node exited at start (log above)"
		fi
		curl -sf -m 2 "$base/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	((i < 1200)) || die "cloche-node does not answer /healthz on port $port"
	get /v1/sandboxes | jq -r '.sandboxes[].id' >>"$work/foreign"
}

stop_node() {
	local i
	[[ -n $node_pid ]] || return 0
	kill -TERM "$node_pid" 2>/dev/null
	for ((i = 0; i < 150; i++)); do
		kill -0 "$node_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$node_pid" 2>/dev/null && kill -KILL "$node_pid" 2>/dev/null
	wait "$node_pid" 2>/dev/null
	node_pid=
}

# call FILE METHOD PATH [BODY]: prints "<status> <ms>", the body goes to FILE.
call() {
	local r
	r=$(curl -s -m 300 -o "$1" -w '%{http_code} %{time_total}' -X "$2" \
		-H "Authorization: Bearer $cred" \
		${4:+-H 'Content-Type: application/json' --data-binary "$4"} "$base$3") || r="000 0"
	awk '{printf "%s %d\n", $1, $2 * 1000 + 0.5}' <<<"$r"
}
get() { curl -s -m 30 -H "Authorization: Bearer $cred" "$base$1"; }
mine() { echo "$1" >>"$work/mine"; }
# Every sandbox the running agent lists that it did not already know at
# start is ours (warm members get ids chosen by the agent).
note_mine() {
	get /v1/sandboxes | jq -r '.sandboxes[].id' 2>/dev/null | grep -vxFf "$work/foreign" >>"$work/mine"
}
ours() { sort -u "$work/mine"; }

# destroy ID: DELETE through the agent, retried while it is still starting;
# prints the milliseconds of the DELETE that succeeded.
destroy() {
	local r i
	for ((i = 0; i < 150; i++)); do
		r=$(call "$work/del-$1" DELETE "/v1/sandboxes/$1")
		case ${r%% *} in
		200) echo "${r#* }"; return 0 ;;
		404) return 0 ;;
		409) sleep 2 ;;
		*) echo "DELETE $1: $r $(cat "$work/del-$1" 2>/dev/null)" >&2; return 1 ;;
		esac
	done
	return 1
}

cleaned=0
# shellcheck disable=SC2317  # called by the traps
cleanup() {
	local id pending left=() jobs_=()
	((cleaned)) && return
	cleaned=1
	trap '' INT TERM
	if [[ -n $node_pid ]] && kill -0 "$node_pid" 2>/dev/null; then
		note_mine
		if [[ $node_kind == warm ]]; then
			# The agent would refill whatever we delete: stop it first (a create
			# in progress keeps going as a detached runsc; give it time).
			stop_node
			sleep 3
		fi
	fi
	# What still exists of ours: on disk, as netns, or known to the agent.
	pending=$({
		for id in $(ours); do
			[[ -e $CLOCHE_POOL/sandboxes/$id || -e /var/run/netns/S-$id || -e /var/run/netns/R-$id ]] && echo "$id"
		done
		[[ -n $node_pid ]] && get /v1/sandboxes | jq -r '.sandboxes[].id' 2>/dev/null | grep -xFf <(ours)
	} | sort -u)
	if [[ -n $pending ]]; then
		echo "cleaning up: $(tr '\n' ' ' <<<"$pending")" >&2
		for id in $pending; do
			if [[ -n $node_pid ]]; then
				destroy "$id" >/dev/null || sb_down "$id" >/dev/null 2>&1
			else
				sb_down "$id" >/dev/null 2>&1
			fi &
			jobs_+=($!)
		done
		wait "${jobs_[@]}"
	fi
	stop_node
	for id in $(ours); do
		if [[ -e $CLOCHE_POOL/sandboxes/$id || -e /var/run/netns/S-$id || -e /var/run/netns/R-$id ]]; then
			sb_down "$id" >/dev/null 2>&1
			[[ -e $CLOCHE_POOL/sandboxes/$id || -e /var/run/netns/S-$id ]] && left+=("$id")
		fi
	done
	((${#left[@]} == 0)) || echo "bench/node.sh: LEFT BEHIND: ${left[*]} (see $work/node.log)" >&2
	if [[ ${NODE_BENCH_KEEP_LOG:-0} == 1 || ${#left[@]} -gt 0 ]]; then
		echo "agent log: $work/node.log" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'echo " interrupted" >&2; exit 130' INT TERM

stats() { # "min median max" of the numbers on stdin
	sort -n | awk '{a[NR] = $1} END {if (NR) printf "%d %d %d\n", a[1], a[int((NR + 1) / 2)], a[NR]}'
}
avail_kib() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
# busy and total jiffies of the whole host, from the cpu line of /proc/stat.
cpu_jiffies() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat; }
# Host CPU load over $1 seconds, in cores busy (e.g. 0.35).
host_busy_cores() {
	local b0 t0 b1 t1
	read -r b0 t0 < <(cpu_jiffies)
	sleep "$1"
	read -r b1 t1 < <(cpu_jiffies)
	awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v n="$(nproc)" 'BEGIN {printf "%.3f\n", t ? n * b / t : 0}'
}
descendants() { # PID and all its descendants
	local kids=$1 k
	while [[ -n $kids ]]; do
		echo "$kids"
		kids=$(for k in $kids; do pgrep -P "$k"; done)
	done
}
pss_kib() { # sum of Pss over PIDs
	local p s=0 v
	for p in "$@"; do
		v=$(awk '$1 == "Pss:" {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
		s=$((s + ${v:-0}))
	done
	echo "$s"
}
cgroup_cpu_ns() { cat "/sys/fs/cgroup/cpuacct/$1/cpuacct.usage" 2>/dev/null || echo 0; }

create() { # create ID: POST with that id; prints "<status> <ms> <boot_ms>"
	local r
	mine "$1"
	r=$(call "$work/c-$1" POST /v1/sandboxes "{\"id\":\"$1\",\"template\":\"$tname\"}")
	echo "$r $(jq -r '.boot_ms // 0' "$work/c-$1" 2>/dev/null || echo 0)"
}

echo "cloche-node benchmark: $tname, $(nproc) cores, $(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024)) MiB, port $port"

# --- 2. warm pool (first: its agent is then replaced by a plain one) -----------
echo
echo "== warm pool: --warm-pool desktop=$warm_k"
start_node "desktop=$warm_k"
t0=$(now_ms)
while :; do
	cap=$(get /v1/capacity)
	ready=$(jq '.warm[0].ready // 0' <<<"$cap" 2>/dev/null || echo 0)
	note_mine
	((ready >= warm_k)) && break
	(($(now_ms) - t0 < warm_k * 240000)) || die "warm pool not full after $((warm_k * 240)) s: $cap"
	kill -0 "$node_pid" 2>/dev/null || die "cloche-node died (log: $work/node.log)"
	sleep 0.5
done
fill_s=$(awk -v d=$(($(now_ms) - t0)) 'BEGIN {printf "%.1f", d / 1000}')
echo "pool filled from empty: $warm_k in $fill_s s"
sleep 2 # let the last member's boot finish its work

log_mark=$(wc -l <"$work/node.log")
pids=()
for ((i = 0; i < warm_k; i++)); do
	call "$work/claim$i" POST /v1/sandboxes '{}' >"$work/claim$i.r" &
	pids+=($!)
done
wait "${pids[@]}"
t_claimed=$(now_ms)
claim_ms=()
claimed=()
nwarm=0
for ((i = 0; i < warm_k; i++)); do
	read -r st cms <"$work/claim$i.r"
	id=$(jq -r '.id // empty' "$work/claim$i" 2>/dev/null)
	[[ -n $id ]] && { mine "$id"; claimed+=("$id"); }
	[[ $st == 201 ]] || die "claim $i answered $st: $(cat "$work/claim$i")"
	[[ $(jq -r '.warm // false' "$work/claim$i") == true ]] && ((nwarm++))
	claim_ms+=("$cms")
done
read -r cmin cmed cmax < <(printf '%s\n' "${claim_ms[@]}" | stats)
echo "claimed $warm_k at once: $nwarm warm; claim latency min $cmin / median $cmed / max $cmax ms"
# (Background jobs are waited for by PID: the agent is a child too.)
dpids=()
if [[ $hold_claimed != 1 ]]; then
	for id in "${claimed[@]}"; do destroy "$id" >/dev/null & dpids+=($!); done
fi
while :; do
	cap=$(get /v1/capacity)
	ready=$(jq '.warm[0].ready // 0' <<<"$cap" 2>/dev/null || echo 0)
	starting=$(jq '.warm[0].starting // 0' <<<"$cap" 2>/dev/null || echo 0)
	note_mine
	((ready >= warm_k && starting == 0)) && break
	(($(now_ms) - t_claimed < warm_k * 240000)) || die "warm pool not refilled after $((warm_k * 240)) s: $cap"
	kill -0 "$node_pid" 2>/dev/null || die "cloche-node died (log: $work/node.log)"
	sleep 0.5
done
refill_ms=$(($(now_ms) - t_claimed))
if [[ $hold_claimed == 1 ]]; then
	for id in "${claimed[@]}"; do destroy "$id" >/dev/null & dpids+=($!); done
fi
((${#dpids[@]})) && wait "${dpids[@]}"
refill_s=$(awk -v d="$refill_ms" 'BEGIN {printf "%.1f", d / 1000}')
refill_per_min=$(awk -v d="$refill_ms" -v k="$warm_k" 'BEGIN {printf "%.2f", 60000 * k / d}')
s_per_member=$(awk -v d="$refill_ms" -v k="$warm_k" 'BEGIN {printf "%.1f", d / 1000 / k}')
# The agent logs each member's create time ("warm sandbox added") and each
# failed one; a failure makes the refill figure meaningless.
tail -n +$((log_mark + 1)) "$work/node.log" >"$work/refill.log"
member_ms=$(grep '"warm sandbox added"' "$work/refill.log" | jq -r '.ms // empty' 2>/dev/null | stats)
refill_failed=$(grep -c '"warm pool create failed"' "$work/refill.log")
echo "refill back to $warm_k ready: $refill_s s -> $refill_per_min sandboxes/min, $s_per_member s per member"
echo "  (agent's create time per member during the refill, min/median/max ms: ${member_ms:-n/a})"
if ((refill_failed > 0)); then
	echo "  WARNING: $refill_failed member create(s) failed during the refill; the figure includes retries:" >&2
	grep '"warm pool create failed"' "$work/refill.log" | jq -r '"    " + .error' >&2
fi

# Replace the warm agent with a plain one: it re-adopts the pool members
# (unclaimed, so nobody refills them) and we destroy them.
note_mine
pool_ids=$(get /v1/sandboxes | jq -r '.sandboxes[] | select(.pooled) | .id' | grep -vxFf "$work/foreign")
stop_node
sleep 1
start_node ""
dpids=()
for id in $pool_ids; do destroy "$id" >/dev/null & dpids+=($!); done
((${#dpids[@]})) && wait "${dpids[@]}"

# --- 1. cold create-to-ready ----------------------------------------------------
echo
echo "== cold create-to-ready, $cold_n sequential creates"
cold_ms=()
cold_boot=()
del_ms=()
for ((n = 1; n <= cold_n; n++)); do
	id=$(printf "%s-c%02d" "$pre" "$n")
	read -r st cms bms < <(create "$id")
	[[ $st == 201 ]] || die "create $id answered $st: $(cat "$work/c-$id" 2>/dev/null)"
	cold_ms+=("$cms")
	cold_boot+=("$bms")
	dms=$(destroy "$id") || die "destroy of $id failed"
	del_ms+=("$dms")
	echo "create $n: $cms ms to ready (agent's boot_ms $bms), destroy $dms ms"
done
read -r cmin_c cmed_c cmax_c < <(printf '%s\n' "${cold_ms[@]}" | stats)
read -r dmin dmed dmax < <(printf '%s\n' "${del_ms[@]}" | stats)

# --- 3. memory and idle CPU per sandbox ----------------------------------------
echo
echo "== $mem_m idle sandboxes (settle ${settle} s)"
sleep 3
base_avail=$(avail_kib)
base_cores=$(host_busy_cores "$cpu_s")
base_avail=$(( (base_avail + $(avail_kib)) / 2 ))
mids=()
for ((n = 1; n <= mem_m; n++)); do
	id=$(printf "%s-m%02d" "$pre" "$n")
	read -r st cms bms < <(create "$id")
	[[ $st == 201 ]] || die "create $id answered $st: $(cat "$work/c-$id" 2>/dev/null)"
	mids+=("$id")
	echo "up: $id ($cms ms)"
done
sleep "$settle"
declare -A cg0
for id in "${mids[@]}"; do cg0[$id]=$(cgroup_cpu_ns "$id"); done
with_cores=$(host_busy_cores "$cpu_s")
cg_ns=0
for id in "${mids[@]}"; do cg_ns=$((cg_ns + $(cgroup_cpu_ns "$id") - ${cg0[$id]})); done
with_avail=$(avail_kib)
samples=()
printf '%-16s %12s %8s %12s %14s %12s\n' sandbox "sentry PSS" procs "gofer PSS" "guest used" "cgroup mem"
for id in "${mids[@]}"; do
	sp=$(sandbox_pid "$id")
	gp=$(gofer_pid "$id")
	alive_pid "$sp" || die "$id: no live sentry (state file $CLOCHE_RUNSC_ROOT/${id}_sandbox:$id.state)"
	mapfile -t sent < <(descendants "$sp")
	mapfile -t gof < <(descendants "$gp")
	s_kib=$(pss_kib "${sent[@]}")
	g_kib=$(pss_kib "${gof[@]}")
	guest_kib=$(sb_exec "$id" cat /proc/meminfo 2>/dev/null |
		awk '/^MemTotal:/ {t = $2} /^MemAvailable:/ {a = $2} END {print (t && a) ? t - a : -1}')
	cgm=$(( $(cat "/sys/fs/cgroup/memory/$id/memory.usage_in_bytes" 2>/dev/null || echo 0) / 1024 ))
	printf '%-16s %8d MiB %8d %8d MiB %10d MiB %8d MiB\n' "$id" $((s_kib / 1024)) "${#sent[@]}" \
		$((g_kib / 1024)) $((guest_kib / 1024)) $((cgm / 1024))
	samples+=("$(jq -nc --arg id "$id" --argjson s "$s_kib" --argjson p "${#sent[@]}" --argjson g "$g_kib" \
		--argjson q "$guest_kib" --argjson c "$cgm" \
		'{id: $id, sentry_pss_kib: $s, sentry_procs: $p, gofer_pss_kib: $g, guest_used_kib: $q, cgroup_usage_kib: $c}')")
done
samples_json=$(printf '%s\n' "${samples[@]}" | jq -sc .)
mem=$(jq -c --argjson n "$mem_m" 'def mib(f): map(f) | add / $n / 1024 * 10 | round / 10; {
	sentry: mib(.sentry_pss_kib), gofer: mib(.gofer_pss_kib), guest: mib(.guest_used_kib),
	cgroup: mib(.cgroup_usage_kib), procs: (map(.sentry_procs) | add / $n | round)}' <<<"$samples_json")
drop_mib=$(awk -v a="$base_avail" -v b="$with_avail" -v n="$mem_m" 'BEGIN {printf "%.0f", (a - b) / n / 1024}')
pss_mib=$(jq -r '.sentry + .gofer | floor' <<<"$mem")
cpu_procstat=$(awk -v w="$with_cores" -v b="$base_cores" -v n="$mem_m" 'BEGIN {printf "%.4f", (w - b) / n}')
cpu_cgroup=$(awk -v ns="$cg_ns" -v s="$cpu_s" -v n="$mem_m" 'BEGIN {printf "%.4f", ns / 1e9 / s / n}')

# --- 4. capacity --------------------------------------------------------------
# The fill answers "how many desktops are ready at once here before memory or
# the node's limit stops it".  By default the sandboxes are forks of the
# first idle one (a checkpoint and up to 8 restores at once, about 1 s each,
# what a booted template will make every sandbox): booting 80 desktops one
# after the other takes 15-20 minutes on 2 cores, and the boot rate is not
# what this measures (the cold and warm figures above are).  Every child is a
# whole desktop (its own rootfs snapshot, netns pair, sentry and gofer) that
# the agent calls ready.  NODE_BENCH_FILL_BY=boot creates them instead.
fill_json=null
if ((fill_max > 0)); then
	echo
	echo "== capacity fill ($fill_by): up to $fill_max sandboxes, reserve $reserve_mib MiB of MemAvailable, at most $fill_budget s"
	per_kib=$(( drop_mib > 0 ? drop_mib * 1024 : pss_mib * 1024 ))
	count=${#mids[@]}
	parent=${mids[0]}
	why="reached NODE_BENCH_FILL=$fill_max"
	stop=cap
	n=0
	fill_ms=()
	fill_t0=$(now_ms)
	fill_avail0=$(avail_kib)
	while ((count < fill_max)); do
		if (($(now_ms) - fill_t0 > fill_budget * 1000)); then
			why="the fill's time budget (NODE_BENCH_FILL_BUDGET_S=$fill_budget) ran out"
			stop="time"
			break
		fi
		# What one more sandbox costs: the booted ones' MemAvailable drop, or
		# what the fill's own have cost so far when that is more.
		if ((count > ${#mids[@]})); then
			seen=$(( (fill_avail0 - $(avail_kib)) / (count - ${#mids[@]}) ))
			((seen > per_kib)) && per_kib=$seen
		fi
		room=$(( ($(avail_kib) - reserve_mib * 1024) / per_kib ))
		if ((room < 1)); then
			why="MemAvailable would fall below the reserve ($reserve_mib MiB)"
			stop=memory
			break
		fi
		if [[ $fill_by == boot ]]; then
			n=$((n + 1))
			id=$(printf "%s-f%03d" "$pre" "$n")
			read -r st cms bms < <(create "$id")
			if [[ $st != 201 ]]; then
				why="create $((count + 1)) failed ($st: $(jq -r '.error.message // empty' "$work/c-$id" 2>/dev/null | head -c 200))"
				stop=node
				break
			fi
			fill_ms+=("$cms")
			count=$((count + 1))
			echo "up: $id ($cms ms, $count running, MemAvailable $(($(avail_kib) / 1024)) MiB)"
			continue
		fi
		b=$fill_batch
		((b > fill_max - count)) && b=$((fill_max - count))
		((b > room)) && b=$room
		kids=()
		for ((k = 0; k < b; k++)); do
			n=$((n + 1))
			kids+=("$(printf "%s-f%03d" "$pre" "$n")")
			mine "${kids[-1]}"
		done
		r=$(call "$work/fork-$n" POST "/v1/sandboxes/$parent/fork" \
			"$(printf '%s\n' "${kids[@]}" | jq -R . | jq -sc '{ids: .}')")
		st=${r%% *}
		if [[ $st != 200 ]]; then
			why="fork $n failed ($st: $(jq -r '.error.message // empty' "$work/fork-$n" 2>/dev/null | head -c 200))"
			stop=node
			break
		fi
		got=$(jq '.children | length' "$work/fork-$n")
		count=$((count + got))
		fill_ms+=("${r#* }")
		echo "forked: $got of $b (${r#* } ms, $count running, MemAvailable $(($(avail_kib) / 1024)) MiB)"
		if ((got < b)); then
			why="$((b - got)) fork child(ren) failed: $(jq -r '.failed[0].error // empty' "$work/fork-$n" | head -c 200)"
			stop=node
			break
		fi
		if [[ $(jq -r .parent.state "$work/fork-$n") != ready ]]; then
			why="the fork's parent did not come back ($(jq -r '.parent.state' "$work/fork-$n"))"
			stop=node
			break
		fi
	done
	fill_took_s=$(awk -v d=$(($(now_ms) - fill_t0)) 'BEGIN {printf "%.1f", d / 1000}')
	sleep "$settle"
	ready_now=$(get /v1/sandboxes | jq --arg p "$pre-" '[.sandboxes[] | select((.id | startswith($p)) and .state == "ready")] | length')
	fill_cores=$(host_busy_cores "$cpu_s")
	fill_avail=$(avail_kib)
	added=$((count - ${#mids[@]}))
	fill_per=null
	((added > 0)) && fill_per=$(( (fill_avail0 - fill_avail) / added / 1024 ))
	echo "ready at once: $ready_now after $fill_took_s s (stopped: $why); MemAvailable $((fill_avail / 1024)) MiB," \
		"$fill_per MiB less per added sandbox; host CPU with them idle: $fill_cores cores busy"
	fill_json=$(jq -nc --argjson max "$fill_max" --argjson ready "$ready_now" --arg why "$why" \
		--arg stop "$stop" --arg by "$fill_by" --argjson s "$fill_took_s" --argjson budget "$fill_budget" \
		--argjson ms "[$(IFS=,; echo "${fill_ms[*]}")]" --argjson per "$fill_per" \
		--argjson cores "$fill_cores" --argjson avail "$((fill_avail / 1024))" \
		'{max: $max, by: $by, ready_at_once: $ready, stopped_because: $why, stopped_by: $stop,
		  fill_s: $s, budget_s: $budget, step_ms: $ms, mem_available_drop_per_sandbox_mib: $per,
		  host_busy_cores: $cores, mem_available_mib: $avail}')
fi

# Destroy the idle ones (and the fill), a few at a time; what the host gets
# back per sandbox is the other view of their memory.
echo
mapfile -t idle_ids < <(grep "^$pre-[mf]" "$work/mine" | sort -u)
echo "destroying ${#idle_ids[@]} sandboxes"
dpids=()
for id in "${idle_ids[@]}"; do
	destroy "$id" >/dev/null &
	dpids+=($!)
	((${#dpids[@]} == 4)) && { wait "${dpids[@]}"; dpids=(); }
done
((${#dpids[@]})) && wait "${dpids[@]}"
sleep 3
regained_mib=$(awk -v a="$(avail_kib)" -v b="$with_avail" -v n="$mem_m" 'BEGIN {printf "%.0f", (a - b) / n / 1024}')
((fill_max > 0)) && regained_mib=null # the fill changed the baseline
regained_txt="$regained_mib MiB"
((fill_max > 0)) && regained_txt="n/a after the fill"

# Memory per sandbox is a range: PSS counts every resident page, including
# host page cache of the sandbox's own rootfs files (a btrfs snapshot has
# its own inodes, so that cache is not shared between sandboxes), which
# MemAvailable counts as reclaimable; the MemAvailable drop leaves it out.
usable_mib=$(( base_avail / 1024 - reserve_mib ))
per_mem=$(( drop_mib > 0 ? drop_mib : pss_mib ))
proj_mem=$(( per_mem > 0 ? usable_mib / per_mem : 0 ))
proj_mem_pss=$(( pss_mib > 0 ? usable_mib / pss_mib : 0 ))
mem_lo=$(( proj_mem_pss < proj_mem ? proj_mem_pss : proj_mem ))
mem_hi=$(( proj_mem_pss > proj_mem ? proj_mem_pss : proj_mem ))
# CPU: the /proc/stat figure, unless the machine was too busy to tell (then
# the sandboxes' own cgroup accounting).
cpu_per=$cpu_procstat
cpu_src=procstat
if awk -v p="$cpu_procstat" -v c="$cpu_cgroup" 'BEGIN {exit !(p <= 0 || p > 3 * c + 0.02 || 3 * p < c)}'; then
	cpu_per=$cpu_cgroup
	cpu_src=cgroup
fi
proj_cpu=$(awk -v n="$(nproc)" -v c="$cpu_per" 'BEGIN {printf "%d", (c > 0 ? n / c : 0)}')
if ((proj_cpu > 0 && proj_cpu < mem_lo)); then
	binds=cpu
elif ((proj_cpu == 0 || proj_cpu > mem_hi)); then
	binds=memory
else
	binds="cpu or memory (the CPU projection is inside the memory range)"
fi

echo
printf '%-52s %s\n' "cold create -> ready (API, n=$cold_n)" "median $cmed_c ms (min $cmin_c, max $cmax_c)"
printf '%-52s %s\n' "destroy (DELETE -> 200)" "median $dmed ms (min $dmin, max $dmax)"
printf '%-52s %s\n' "warm pool of $warm_k: filled from empty" "$fill_s s"
printf '%-52s %s\n' "claim of $warm_k at once ($nwarm warm)" "median $cmed ms (max $cmax)"
printf '%-52s %s\n' "refill to $warm_k ready" "$refill_s s: $refill_per_min sandboxes/min, $s_per_member s each$( ((refill_failed)) && echo " ($refill_failed failed creates!)")"
printf '%-52s %s\n' "idle sandbox: sentry PSS ($(jq -r '.procs' <<<"$mem") procs) / gofer PSS" \
	"$(jq -r '"\(.sentry | floor) MiB / \(.gofer | floor) MiB"' <<<"$mem")"
printf '%-52s %s\n' "idle sandbox: guest MemTotal - MemAvailable" "$(jq -r '.guest | floor' <<<"$mem") MiB"
printf '%-52s %s\n' "idle sandbox: host MemAvailable drop (n=$mem_m)" "$drop_mib MiB (regained on destroy: $regained_txt)"
printf '%-52s %s\n' "idle sandbox: CPU (/proc/stat; its cgroup)" \
	"$(awk -v p="$cpu_procstat" -v c="$cpu_cgroup" 'BEGIN {printf "%.1f %%; %.1f %% of a core", 100 * p, 100 * c}')"
printf '%-52s %s\n' "host CPU busy: before / with $mem_m idle" "$base_cores / $with_cores cores"
printf '%-52s %s\n' "projection: memory ($usable_mib MiB usable / $per_mem MiB)" "$proj_mem sandboxes (by PSS, $pss_mib MiB: $proj_mem_pss)"
printf '%-52s %s\n' "projection: CPU ($(nproc) cores at 100 % / idle CPU, $cpu_src)" "$proj_cpu sandboxes"
printf '%-52s %s\n' "binds first" "$binds"
[[ $fill_json != null ]] && printf '%-52s %s\n' "ready at once, measured ($(jq -r .by <<<"$fill_json"))" \
	"$(jq -r '"\(.ready_at_once) (stopped: \(.stopped_because)); \(.mem_available_drop_per_sandbox_mib // "-") MiB of MemAvailable each"' <<<"$fill_json")"

jq -n --arg at "$(date -u +%FT%TZ)" --arg t "$tname" --argjson cores "$(nproc)" \
	--argjson memtotal "$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))" \
	--argjson cold "[$(IFS=,; echo "${cold_ms[*]}")]" --argjson boot "[$(IFS=,; echo "${cold_boot[*]}")]" \
	--argjson del "[$(IFS=,; echo "${del_ms[*]}")]" --argjson cmed_c "$cmed_c" --argjson dmed "$dmed" \
	--argjson k "$warm_k" --argjson fill_s "$fill_s" --argjson claims "[$(IFS=,; echo "${claim_ms[*]}")]" \
	--argjson nwarm "$nwarm" --argjson refill_s "$refill_s" --argjson rpm "$refill_per_min" \
	--argjson spm "$s_per_member" --argjson rfail "$refill_failed" --argjson hold "$([[ $hold_claimed == 1 ]] && echo true || echo false)" \
	--argjson m "$mem_m" --argjson settle "$settle" --argjson mem "$mem" --argjson samples "$samples_json" \
	--argjson drop "$drop_mib" --argjson regained "$regained_mib" --argjson base_cores "$base_cores" \
	--argjson with_cores "$with_cores" --argjson cpu_p "$cpu_procstat" --argjson cpu_c "$cpu_cgroup" \
	--argjson reserve "$reserve_mib" --argjson usable "$usable_mib" --argjson per_mem "$per_mem" \
	--argjson proj_mem "$proj_mem" --argjson proj_pss "$proj_mem_pss" --argjson proj_cpu "$proj_cpu" \
	--arg cpu_src "$cpu_src" --arg binds "$binds" --argjson fill "$fill_json" '{
	bench: "node", at: $at, template: $t, host: {cpus: $cores, mem_total_mib: $memtotal},
	cold: {n: ($cold | length), create_ms: $cold, agent_boot_ms: $boot, create_ms_median: $cmed_c,
		create_ms_min: ($cold | min), create_ms_max: ($cold | max), destroy_ms: $del, destroy_ms_median: $dmed},
	warm: {k: $k, fill_from_empty_s: $fill_s, claim_ms: $claims, claim_ms_max: ($claims | max),
		claims_warm: $nwarm, claimed_held_during_refill: $hold, refill_s: $refill_s,
		refill_per_min: $rpm, refill_s_per_member: $spm, refill_failed_creates: $rfail},
	memory: {m: $m, settle_s: $settle, sentry_pss_mib: $mem.sentry, sentry_procs: $mem.procs,
		gofer_pss_mib: $mem.gofer, guest_used_mib: $mem.guest, cgroup_usage_mib: $mem.cgroup,
		host_available_drop_mib: $drop, host_available_regained_mib: $regained, samples: $samples},
	cpu: {host_busy_cores_before: $base_cores, host_busy_cores_with_m: $with_cores,
		idle_per_sandbox_cores_procstat: $cpu_p, idle_per_sandbox_cores_cgroup: $cpu_c},
	capacity: {reserve_mib: $reserve, usable_mib: $usable, mem_per_sandbox_mib: $per_mem,
		projected_by_memory: $proj_mem, projected_by_pss: $proj_pss, projected_by_cpu: $proj_cpu,
		cpu_figure: $cpu_src, binds_first: $binds, measured: $fill}}' >"$out" || die "cannot write $out"
echo "wrote $out"
