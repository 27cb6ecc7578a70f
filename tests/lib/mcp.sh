# shellcheck shell=bash
# MCP helpers for the integration tests (needs tests/lib/tap.sh).

# CLOCHE_CONFORMANCE_BEARER=KEY: every request of the suite carries it as a
# Bearer (tests/e2e/lib/conformance-bearer.mjs), for a server that wants a key.

# The scenarios of the pinned MCP conformance suite that every cloche MCP
# server must pass (others need fixture tools; docs/mcp.md lists why).
# shellcheck disable=SC2034  # used by the tests that source this file
MCP_CONFORMANCE_SCENARIOS="server-initialize ping tools-list dns-rebinding-protection"

# mcp_conformance URL SCENARIO OUTDIR [RUNNER...]: runs one scenario of the
# conformance suite against URL and prints ok/not ok.  RUNNER (e.g.
# `sb_in_router ID`) runs the client somewhere else, such as a router netns.
mcp_conformance() {
	local url=$1 scenario=$2 outdir=$3 out rc summary
	shift 3
	out="$outdir/conformance-${scenario}-${url//[^a-z0-9]/_}.txt"
	# The suite (0.1.16) wants Node 22's fs.globSync; the shim gives it one on Node 20.
	# shellcheck disable=SC2016  # $1 and $2 belong to the inner bash
	"$@" env NODE_OPTIONS="--import $PWD/tests/e2e/lib/conformance-node20.mjs --import $PWD/tests/e2e/lib/conformance-bearer.mjs" \
		bash -c 'cd tests/e2e && exec timeout 120 npx --no-install conformance server --url "$1" --scenario "$2"' \
		conformance "$url" "$scenario" >"$out" 2>&1
	rc=$?
	summary=$(grep -E 'Passed: [0-9]+/[0-9]+' "$out" | tail -n 1)
	if [[ $rc == 0 ]] && grep -qE 'Passed: ([0-9]+)/\1, 0 failed' "$out"; then
		ok "conformance $scenario at $url: $summary"
	else
		not_ok "conformance $scenario at $url (exit $rc): ${summary:-no summary}"
		sed 's/^/# /' "$out" | tail -n 20
	fi
}
