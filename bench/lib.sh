# shellcheck shell=bash
# What every benchmark starts with: `. "$(dirname "$0")/lib.sh"` first thing.
# It sets -u and pipefail (-e stays each bench's choice: `set -e` after it),
# moves to the repository root, sources tests/lib/tap.sh (free_port, now_ms,
# wait_for) and makes bench/results, where every bench writes its figures.
#
#   BENCH                      the bench's name (bench/NAME.sh)
#   die MESSAGE                "bench/NAME.sh: MESSAGE" on stderr, exit 1
#   bench_wait SECONDS WHAT CMD...
#                              wait_for with CMD's output dropped; on time out
#                              says "NAME: no WHAT after SECONDS s" and fails
# With tests/lib/sandbox.sh sourced (the benches that boot sandboxes):
#   bench_template             sets template: CLOCHE_TEMPLATE, or the newest
#                              desktop template of the pool; dies without one
#   bench_sandbox ID           boots sandbox ID from $template and waits until
#                              it is ready (180 s); exits on failure, and the
#                              EXIT trap takes it down with the agent
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. tests/lib/tap.sh

BENCH=$(basename "$0" .sh)
mkdir -p bench/results

die() { echo "bench/$BENCH.sh: $*" >&2; exit 1; }

bench_wait() {
	local secs=$1 what=$2
	shift 2
	wait_for "$secs" "$@" >/dev/null 2>&1 && return 0
	echo "$BENCH: no $what after $secs s" >&2
	return 1
}

bench_template() {
	template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
	[[ -n $template ]] || die "no desktop template: run make template"
}

bench_sandbox() {
	bench_sandbox_id=$1
	# shellcheck disable=SC2317  # called by the EXIT trap
	bench_sandbox_down() { sb_down "$bench_sandbox_id" >/dev/null 2>&1; sb_agent_stop; }
	trap bench_sandbox_down EXIT
	sb_up "$1" "$template" || exit 1
	sb_wait_ready "$1" 180 || exit 1
}
