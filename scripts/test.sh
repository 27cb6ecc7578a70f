#!/usr/bin/env bash
# `make test`: installs what is needed, builds (plain and with ASan+UBSan),
# then runs everything in two lanes, which share no resource:
#   host lane: the C unit tests under both builds, the fuzz pass, and the
#              integration suites marked `# lane: host` (no pool, no sandbox,
#              no port 80: cloche-vnc, cloche-init, the proxy, S3 on the host)
#   pool lane: the desktop template, then every other integration suite in
#              order (they share the btrfs pool, its one cloche-node, port 80)
# side by side by default.  On two cores the gain is small (about 87 against
# 90 min here, docs/benchmarks.md): nearly every step is bound by the CPU.
# Suites marked `# sanitize: yes` run a second time on the ASan+UBSan build.
# Each step's output is printed whole when it ends, with its time; the run
# ends with the table of times and one line "N passed, N failed", and exits
# non-zero when anything failed.
#
#   CLOCHE_TESTS="boot vnc-host"   run only the integration suites matching these words
#   CLOCHE_LANES=1                 the two lanes one after the other (steps timed alone)
#   CLOCHE_FUZZ_SECONDS (20)       how long each fuzz target runs
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib/testrun.sh

# Everything the tests leave in TMPDIR (work directories, browser profiles,
# the empty org.chromium.* directories Chromium leaves behind) goes when the
# run ends.  --one-file-system: never reach into a mount a failed test left.
TMPDIR=$(mktemp -d /tmp/cloche-test.XXXXXX)
export TMPDIR
trap 'rm -rf --one-file-system "$TMPDIR"' EXIT
tr_init "$TMPDIR/.results"
t_start=$SECONDS

fail_early() {
	echo "$1"
	echo "0 passed, 1 failed"
	exit 1
}
printf '\n=== install dependencies\n'
scripts/install-deps.sh || fail_early "installing the dependencies failed"
printf '\n=== build (warnings are errors)\n'
make -j2 all || fail_early "the build failed"
printf '\n=== build with ASan + UBSan\n'
make -j2 SANITIZE=address,undefined all || fail_early "the ASan+UBSan build failed"

SAN_ENV=(BUILD=build-san ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

# suites LANE: the integration scripts of a lane that CLOCHE_TESTS selects.
suites() {
	local t name lane
	for t in tests/integration/test-*.sh; do
		name=$(basename "$t" .sh)
		name=${name#test-}
		lane=pool
		grep -q '^# lane: host' "$t" && lane=host
		[[ $lane == "$1" ]] || continue
		if [[ -n ${CLOCHE_TESTS:-} ]] && ! grep -qw -- "$name" <<<"$CLOCHE_TESTS"; then
			continue
		fi
		echo "$t"
	done
}

# run_suite SCRIPT: the suite, and again under ASan+UBSan when it runs our
# binaries on the host (a leak or undefined behaviour fails the run).
run_suite() {
	local name
	name=$(basename "$1" .sh)
	name=${name#test-}
	tr_suite "$name" "$1"
	if grep -q '^# sanitize: yes' "$1"; then
		tr_suite "$name (ASan+UBSan)" "$1" "${SAN_ENV[@]}"
	fi
}

lane_host() {
	local t
	for t in build/tests/unit-*; do tr_unit "$t"; done
	for t in build-san/tests/unit-*; do
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			tr_unit "$t"
	done
	tr_fuzz "${CLOCHE_FUZZ_SECONDS:-20}"
	for t in $(suites host); do run_suite "$t"; done
}

# The template build prints the new version's path last.
build_template() {
	rootfs/build-template.sh | tee "$TR_DIR/template.out"
	return "${PIPESTATUS[0]}"
}

lane_pool() {
	local t
	[[ -n $(suites pool) ]] || return 0
	if ! tr_step "desktop template" build_template; then
		echo "the template build failed: the pool lane's suites did not run"
		return
	fi
	CLOCHE_TEMPLATE=$(tail -n 1 "$TR_DIR/template.out")
	export CLOCHE_TEMPLATE
	echo "template: $CLOCHE_TEMPLATE"
	for t in $(suites pool); do run_suite "$t"; done
}

if [[ ${CLOCHE_LANES:-2} == 2 ]]; then
	lane_pool &
	pool_pid=$!
	lane_host
	wait "$pool_pid"
else
	lane_host
	lane_pool
fi
tr_summary
rc=$?
echo "make test: $(((SECONDS - t_start) / 60)) min $(((SECONDS - t_start) % 60)) s"
exit $rc
