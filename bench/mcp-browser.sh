#!/usr/bin/env bash
# Benchmark: tools/call round trip of browser_snapshot on mcp-browser inside
# a booted sandbox, measured by the official MCP SDK client from the router
# netns (as the proxy will reach it) on the form test page.  Prints the
# figures and writes bench/results/mcp-browser.json.
#
#   BENCH_CALLS (200)
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

calls=${BENCH_CALLS:-200}
bench_template
id="b-mcpb-$$"
out=bench/results/mcp-browser.json

t0=$(now_ms)
bench_sandbox "$id"
boot_ms=$(($(now_ms) - t0))
res=$(cd tests/e2e && sb_in_router "$id" node mcp-browser-test.mjs --url http://10.0.2.15:7999/mcp --bench "$calls") || exit 1
res=$(tail -n 1 <<<"$res")
jq -n --argjson r "$res" --arg t "$(basename "$template")" --arg at "$(date -u +%FT%TZ)" --argjson boot "$boot_ms" \
	'$r + {template: $t, measured_at: $at, boot_to_ready_ms: $boot, where: "SDK client in the router netns -> 10.0.2.15:7999 (gVisor netstack), form test page"}' >"$out"
printf 'browser_snapshot round trip over %s calls: p50 %s ms, p99 %s ms (boot to ready %s ms)\n' \
	"$calls" "$(jq .p50_ms "$out")" "$(jq .p99_ms "$out")" "$boot_ms"
echo "written: $out"
