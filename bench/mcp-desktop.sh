#!/usr/bin/env bash
# Benchmark: mcp-desktop tools/call round trips through the official SDK
# client, from the router netns (as the proxy will connect) into a booted
# sandbox (1280x800 display, Chromium on the start page):
#   screenshot       full-display PNG (grab + encode + base64 + HTTP)
#   screenshot if_changed  the same screen again: `unchanged` and a hash, no PNG
#   zoom 200x150     a small region: grab cost without most of the encoding
#   cursor_position  no image: the protocol and one X round trip
# BENCH_MCP_DESKTOP_CALLS (100) calls each after 3 warm-up calls.  Prints a
# table and writes bench/results/mcp-desktop.json.
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/sandbox.sh

calls=${BENCH_MCP_DESKTOP_CALLS:-100}
bench_template
id="b-mcpd-$$"
out=bench/results/mcp-desktop.json

bench_sandbox "$id"
sleep 2 # let Chromium finish its first paints

bench() { # args-json
	sb_in_router "$id" node tests/e2e/mcp-desktop-test.mjs --url http://10.0.2.15:8100/mcp \
		--bench "$calls" --bench-args "$1"
}
shot=$(bench '{"action":"screenshot"}') || { echo "screenshot bench failed" >&2; exit 1; }
unch=$(bench '{"action":"screenshot","if_changed":true}') || { echo "if_changed bench failed" >&2; exit 1; }
zoom=$(bench '{"action":"zoom","region":[100,100,300,250]}') || { echo "zoom bench failed" >&2; exit 1; }
cur=$(bench '{"action":"cursor_position"}') || { echo "cursor_position bench failed" >&2; exit 1; }

printf '%-36s %8s %8s %8s %8s %10s %10s\n' "mcp-desktop tools/call (in gVisor)" p50_ms p90_ms p99_ms \
	mean_ms png_bytes answer_B
for row in "screenshot 1280x800:$shot" "screenshot if_changed, unchanged:$unch" "zoom 200x150:$zoom" \
	"cursor_position:$cur"; do
	name=${row%%:*}
	j=${row#*:}
	printf '%-36s %8s %8s %8s %8s %10s %10s\n' "$name" "$(jq .p50_ms <<<"$j")" "$(jq .p90_ms <<<"$j")" \
		"$(jq .p99_ms <<<"$j")" "$(jq .mean_ms <<<"$j")" "$(jq .png_bytes <<<"$j")" \
		"$(jq .answer_bytes_mean <<<"$j")"
done

jq -n --argjson shot "$shot" --argjson unch "$unch" --argjson zoom "$zoom" --argjson cur "$cur" \
	--arg at "$(date -u +%FT%TZ)" --arg t "$(basename "$template")" '
	{bench: "mcp-desktop", at: $at, template: $t, display: "1280x800",
	 screenshot: $shot, screenshot_unchanged: $unch, zoom_200x150: $zoom, cursor_position: $cur,
	 screenshot_p50_ms: $shot.p50_ms, screenshot_p99_ms: $shot.p99_ms,
	 screenshot_unchanged_p50_ms: $unch.p50_ms}' >"$out"
echo "wrote $out"
