#!/usr/bin/env bash
# The first screen a new user sees: `make run` and `make test` on a machine
# without the libraries yet must not ask pkg-config about them before
# install-deps has run (it printed ~60 "Package jansson was not found"
# lines), and a build without them must stop at one line that says what to
# do.  Simulated with a pkg-config that finds nothing.
# lane: host
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

# Run as a new user would, not as a sub-make of `make test` (whose
# MAKEFLAGS and MAKELEVEL would add "Entering directory" lines).
unset MAKEFLAGS MFLAGS MAKELEVEL
no_pc() { PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= "$@" 2>&1; }

for verb in run test deps stop bench "run stop"; do
	# shellcheck disable=SC2086  # "run stop" is two goals
	out=$(no_pc make -n $verb)
	check "make -n $verb without the libraries prints only what it runs" \
		bash -c '! grep -qiE "pkg-config|Package .* was not found|No package" <<<"$1" && grep -q "^scripts/" <<<"$1"' _ "$out"
done

out=$(no_pc make -n all)
rc=$?
check "make all without the libraries fails" test "$rc" != 0
check "... with one line that says to run make deps" \
	bash -c '[[ $(grep -c . <<<"$1") == 1 ]] && grep -q "make deps" <<<"$1"' _ "$out"
check "make -n all with the libraries plans a build" bash -c 'make -n all >/dev/null 2>&1'
tap_exit
