#!/usr/bin/env bash
# `make check`: the edit-compile-test loop.  Builds (warnings are errors),
# runs every C unit test and a short pass of each libFuzzer target.  Needs
# no root, no template, no network: only the libraries `make deps` installs.
# Ends with a table of times and one line "N passed, N failed".
#
#   CLOCHE_FUZZ_SECONDS (5)   how long each fuzz target runs
#   SANITIZE=address,undefined make check   the same under ASan+UBSan (build-san/)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib/testrun.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/cloche-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
tr_init "$work"
build=build${SANITIZE:+-san}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

t0=$SECONDS
for t in "$build"/tests/unit-*; do tr_unit "$t"; done
tr_fuzz "${CLOCHE_FUZZ_SECONDS:-5}"
tr_summary
rc=$?
echo "make check: $((SECONDS - t0)) s after the build"
exit $rc
