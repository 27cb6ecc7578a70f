#!/usr/bin/env bash
# `make test`: installs what is needed, builds (plain and with ASan+UBSan),
# runs the C unit tests under both builds, builds the desktop template and
# runs every integration test under tests/integration/ in order.  Ends with
# one line "N passed, N failed" and exits non-zero when anything failed.
#
#   CLOCHE_TESTS="boot vnc-host"   run only integration tests matching these words
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# Everything the tests leave in TMPDIR (work directories, browser profiles,
# the empty org.chromium.* directories Chromium leaves behind) goes when the
# run ends.  --one-file-system: never reach into a mount a failed test left.
TMPDIR=$(mktemp -d /tmp/cloche-test.XXXXXX)
export TMPDIR
trap 'rm -rf --one-file-system "$TMPDIR"' EXIT

passed=0
failed=0
failures=()
note() { printf '\n=== %s\n' "$*"; }
record() { # name status
	if [[ $2 == 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}

# Counts a Check runner's summary ("100%: Checks: 5, Failures: 0, Errors: 0").
run_unit() {
	local bin=$1 out rc checks fails errs
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	read -r checks fails errs < <(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' <<<"$out" | tail -n 1)
	if [[ -z ${checks:-} ]]; then
		record "$bin" 1
		return
	fi
	passed=$((passed + checks - fails - errs))
	failed=$((failed + fails + errs))
	((fails + errs == 0)) || failures+=("$bin")
	[[ $rc == 0 ]] || [[ $((fails + errs)) -gt 0 ]] || record "$bin (exit $rc)" 1
}

note "install dependencies"
scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

note "build (warnings are errors)"
make -j2 all || { echo "0 passed, 1 failed"; exit 1; }
note "build with ASan + UBSan"
make -j2 SANITIZE=address,undefined all || { echo "0 passed, 1 failed"; exit 1; }

note "unit tests"
for t in build/tests/unit-*; do run_unit "$t"; done
note "unit tests under ASan + UBSan"
for t in build-san/tests/unit-*; do
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_unit "$t"
done

note "fuzzing the parsers (libFuzzer, ASan+UBSan, ${CLOCHE_FUZZ_SECONDS:-20} s each)"
fuzz_out=$(make -s fuzz FUZZ_SECONDS="${CLOCHE_FUZZ_SECONDS:-20}" 2>&1)
printf '%s\n' "$fuzz_out"
passed=$((passed + $(grep -c '^ok - ' <<<"$fuzz_out")))
fuzz_failed=$(grep -c '^not ok - ' <<<"$fuzz_out")
failed=$((failed + fuzz_failed))
((fuzz_failed == 0)) || failures+=(fuzz)
grep -q '^ok - \|^not ok - ' <<<"$fuzz_out" || record "fuzz build" 1

note "desktop template"
if ! template=$(rootfs/build-template.sh); then
	echo "template build failed"
	record template 1
	echo "$passed passed, $failed failed"
	exit 1
fi
export CLOCHE_TEMPLATE=${template##*$'\n'}
echo "template: $CLOCHE_TEMPLATE"

# run_integration NAME SCRIPT [ENV=VALUE...]
run_integration() {
	local name=$1 t=$2 out rc oks noks
	shift 2
	note "integration: $name"
	# Each script prints "ok - ..." / "not ok - ..." lines; count them.
	out=$(mktemp)
	env "$@" timeout --foreground 1200 bash "$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	oks=$(grep -c '^ok - ' "$out")
	noks=$(grep -c '^not ok - ' "$out")
	passed=$((passed + oks))
	failed=$((failed + noks))
	((noks == 0)) || failures+=("$name")
	if [[ $rc != 0 ]] && ((noks == 0)); then record "$name (exit $rc)" 1; fi
	rm -f "$out"
}

for t in tests/integration/test-*.sh; do
	name=$(basename "$t" .sh)
	name=${name#test-}
	if [[ -n ${CLOCHE_TESTS:-} ]] && ! grep -qw -- "$name" <<<"$CLOCHE_TESTS"; then
		continue
	fi
	run_integration "$name" "$t"
	# Tests that run our binaries on the host also run them built with
	# ASan+UBSan: a leak or undefined behaviour fails the run.
	if grep -q '^# sanitize: yes' "$t"; then
		run_integration "$name (ASan+UBSan)" "$t" BUILD=build-san \
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	fi
done

note "summary"
((failed == 0)) || printf 'failed: %s\n' "${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
