# shellcheck shell=bash
# Running and counting tests, for `make check` (scripts/check.sh) and
# `make test` (scripts/test.sh).  Every step (a unit binary, the fuzz pass,
# an integration suite, the template build) appends one line to the results
# file $TR_RESULTS:
#
#	NAME<TAB>PASSED<TAB>FAILED<TAB>SECONDS
#
# and its output goes to $TR_LOGS/<n>.log, which is printed whole when the
# step ends, under a lock, so that steps running in parallel lanes never
# interleave their lines.  tr_summary reads the results file at the end.
#
#   tr_init DIR                 results and logs under DIR
#   tr_unit BIN                 a Check runner ("N%: Checks: C, Failures: F, Errors: E")
#   tr_fuzz SECONDS             `make fuzz` for SECONDS a target
#   tr_suite NAME SCRIPT [ENV=VALUE...]
#                               an integration script's ok / not ok lines
#   tr_step NAME CMD...         any command: passes when it exits 0
#   tr_summary                  the table of times, "N passed, N failed"; 0 if all passed

tr_init() {
	TR_DIR=$1
	TR_RESULTS=$TR_DIR/results
	TR_LOGS=$TR_DIR/logs
	mkdir -p "$TR_LOGS"
	: >"$TR_RESULTS"
	: >"$TR_DIR/print.lock"
}

# _tr_log NAME: a new log file for a step.
_tr_log() { mktemp "$TR_LOGS/XXXXXX.log"; }

# _tr_done NAME PASSED FAILED SECONDS LOG: records the step and prints its output.
_tr_done() {
	local name=$1 passed=$2 failed=$3 secs=$4 log=$5
	printf '%s\t%s\t%s\t%s\n' "$name" "$passed" "$failed" "$secs" >>"$TR_RESULTS"
	{
		flock 9
		printf '\n=== %s\n' "$name"
		cat "$log"
		printf '=== %s: %s passed, %s failed, %s s\n' "$name" "$passed" "$failed" "$secs"
	} 9>>"$TR_DIR/print.lock"
}

tr_unit() {
	local bin=$1 log t0 rc checks fails errs
	log=$(_tr_log)
	t0=$SECONDS
	# Check's 4 s a test is for hangs; a loaded machine (two lanes, ASan) is not one.
	CK_FORK=yes CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-5} "$bin" >"$log" 2>&1
	rc=$?
	read -r checks fails errs < <(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' "$log" | tail -n 1)
	if [[ -z ${checks:-} ]]; then
		echo "no Check summary (exit $rc)" >>"$log"
		checks=0 fails=0 errs=1
	elif [[ $rc != 0 ]] && ((fails + errs == 0)); then
		echo "exit $rc with every check passed" >>"$log"
		errs=1
	fi
	_tr_done "unit: $bin" $((checks - fails - errs > 0 ? checks - fails - errs : 0)) $((fails + errs)) $((SECONDS - t0)) "$log"
}

tr_fuzz() {
	local secs=$1 log t0 oks noks
	log=$(_tr_log)
	t0=$SECONDS
	make -s fuzz FUZZ_SECONDS="$secs" >"$log" 2>&1
	oks=$(grep -c '^ok - ' "$log")
	noks=$(grep -c '^not ok - ' "$log")
	((oks + noks > 0)) || noks=1 # the targets did not build
	_tr_done "fuzzing the parsers (libFuzzer, ASan+UBSan, $secs s each)" "$oks" "$noks" $((SECONDS - t0)) "$log"
}

# Integration scripts print "ok - ..." / "not ok - ..." lines; a script
# that exits non-zero without a "not ok" line counts as one failure.
tr_suite() {
	local name=$1 script=$2 log t0 rc oks noks
	shift 2
	log=$(_tr_log)
	t0=$SECONDS
	env "$@" timeout --foreground 1200 bash "$script" </dev/null >"$log" 2>&1
	rc=$?
	oks=$(grep -c '^ok - ' "$log")
	noks=$(grep -c '^not ok - ' "$log")
	if [[ $rc != 0 ]] && ((noks == 0)); then
		echo "not ok - $name exited $rc" >>"$log"
		noks=1
	fi
	_tr_done "integration: $name" "$oks" "$noks" $((SECONDS - t0)) "$log"
}

tr_step() {
	local name=$1 log t0 rc
	shift
	log=$(_tr_log)
	t0=$SECONDS
	"$@" >"$log" 2>&1
	rc=$?
	if [[ $rc == 0 ]]; then
		_tr_done "$name" 1 0 $((SECONDS - t0)) "$log"
	else
		_tr_done "$name" 0 1 $((SECONDS - t0)) "$log"
	fi
	return "$rc"
}

tr_summary() {
	local passed failed
	printf '\n=== summary: each step, slowest first (seconds, passed, failed)\n'
	sort -t $'\t' -k4,4nr "$TR_RESULTS" | awk -F'\t' '{ printf "%6d s %5d %3d  %s\n", $4, $2, $3, $1 }'
	passed=$(awk -F'\t' '{ s += $2 } END { print s + 0 }' "$TR_RESULTS")
	failed=$(awk -F'\t' '{ s += $3 } END { print s + 0 }' "$TR_RESULTS")
	if ((failed > 0)); then
		printf 'failed: %s\n' "$(awk -F'\t' '$3 > 0 { printf "%s%s", sep, $1; sep = ", " }' "$TR_RESULTS")"
	fi
	echo "$passed passed, $failed failed"
	((failed == 0))
}
