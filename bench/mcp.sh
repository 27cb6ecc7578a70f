#!/usr/bin/env bash
# Benchmark: MCP tools/call round trips through the official SDK client,
# from the router netns (as the proxy will connect) into a booted sandbox.
#   shell: BENCH_MCP_CALLS (200) calls of run_command `true` on mcp-shell
#          (each one forks a tree helper and bash inside gVisor), and of
#          stat_path (no fork), to separate protocol cost from process cost.
# Prints a table and merges its keys into bench/results/mcp.json (other MCP
# servers add their own keys to the same file).
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

calls=${BENCH_MCP_CALLS:-200}
bench_template
id="b-mcp-$$"
out=bench/results/mcp.json
[[ -s $out ]] || echo '{}' >"$out"

bench_sandbox "$id"

bench() { # name tool args-json
	sb_in_router "$id" node tests/e2e/mcp-bench.mjs --url http://10.0.2.15:8889/mcp \
		--tool "$2" --args "$3" --calls "$calls"
}
cmd=$(bench shell_run_command run_command '{"command":"true"}') || { echo "run_command bench failed" >&2; exit 1; }
stat=$(bench shell_stat_path stat_path '{"path":"/tmp"}') || { echo "stat_path bench failed" >&2; exit 1; }

printf '%-34s %8s %8s %8s %8s\n' "mcp-shell tools/call (in gVisor)" p50_ms p90_ms p99_ms mean_ms
for row in "run_command true:$cmd" "stat_path /tmp:$stat"; do
	name=${row%%:*}
	j=${row#*:}
	printf '%-34s %8s %8s %8s %8s\n' "$name" "$(jq .p50_ms <<<"$j")" "$(jq .p90_ms <<<"$j")" \
		"$(jq .p99_ms <<<"$j")" "$(jq .mean_ms <<<"$j")"
done

tmp=$(mktemp)
jq --argjson cmd "$cmd" --argjson stat "$stat" --arg at "$(date -u +%FT%TZ)" \
	--arg t "$(basename "$template")" '
	.bench = "mcp" | .template = $t
	| .shell = {at: $at, run_command_true: $cmd, stat_path: $stat}
	| .shell_run_command_p50_ms = $cmd.p50_ms | .shell_run_command_p99_ms = $cmd.p99_ms
	' "$out" >"$tmp" && mv "$tmp" "$out"
echo "wrote $out"
