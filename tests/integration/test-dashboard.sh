#!/usr/bin/env bash
# The dashboard (cloche-portal's `/`) in headless Chromium against a whole
# installation on loopback (tests/lib/stack.sh; the node keeps a warm
# desktop): tests/e2e/dashboard-test.mjs logs in, finds the sandbox of its
# key and not another key's, checks that the thumbnail is a picture of the
# sandbox's screen and follows it, presses every button, opens the details,
# and as an admin the Nodes tab.  Also: the thumbnail endpoint's errors and
# its cache (many askers, one picture from the sandbox).  The screenshots
# go to docs/img/ (CLOCHE_DASHBOARD_SHOTS=DIR puts them elsewhere).
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/stack.sh

stack_init
STACK_NODE_OPTS=(--warm-pool desktop=1)
check "a portal, a node agent (one warm desktop) and a proxy start" stack_up "${CLOCHE_TEST_PREFIX:-t}-dash-$$"
U1=$(stack_key viewer-1)
U2=$(stack_key viewer-2)
acq() { curl -s -m 200 -H "Authorization: Bearer $1" -d '{"ttl":1200,"wait":180}' "$PORTAL/sbv1/acquire"; }
r=$(acq "$U1")
A=$(jq -r .id <<<"$r") TA=$(jq -r .token <<<"$r") BURL=$(jq -r .urls.mcp.browser <<<"$r")
DURL=$(jq -r .urls.mcp.desktop <<<"$r")
B=$(acq "$U2" | jq -r .id)
check "each user key has a ready sandbox" \
	bash -c '[[ $(jq -r .state <<<"$1") == ready && $2 == sb-* ]]' _ "$r" "$B"

# --- the thumbnail endpoint ------------------------------------------------------
th() { curl -s -o "$STACK_WORK/th" -w '%{http_code} %{content_type}' -H "Authorization: Bearer $1" "$PORTAL/sbv1/sandboxes/$2/thumbnail${3:-}"; }
export -f th
export STACK_WORK
check "GET .../thumbnail: a PNG 320 pixels wide" \
	bash -c '[[ $(th "$1" "$2") == "200 image/png" ]] && file "$3/th" | grep -q "PNG image data, 320 x 200"' _ "$U1" "$A" "$STACK_WORK"
check "... ?width=640: 640 pixels" \
	bash -c '[[ $(th "$1" "$2" "?width=640") == "200 image/png" ]] && file "$3/th" | grep -q "640 x 400"' _ "$U1" "$A" "$STACK_WORK"
check "... a width out of range: 400 naming it" \
	bash -c '[[ $(th "$1" "$2" "?width=5000") == 400* ]] && jq -e ".error.field == \"width\"" "$3/th" >/dev/null' _ "$U1" "$A" "$STACK_WORK"
check "... another key's sandbox: 404" bash -c '[[ $(th "$1" "$2") == 404* ]]' _ "$U1" "$B"
check "... no key: 401" bash -c '[[ $(curl -s -o /dev/null -w "%{http_code}" "$1/sbv1/sandboxes/$2/thumbnail") == 401 ]]' _ "$PORTAL" "$A"
tcount() { curl -s "$PORTAL/metrics" | sed -n "s/^cloche_portal_thumbnails_total{result=\"$1\"} //p"; }
f0=$(tcount fetched) c0=$(tcount cached)
sleep 2.1 # past the cache's 2 s
# One curl with 20 parallel transfers: 20 curl processes started on a
# loaded machine (make test runs another lane beside this one) were seen
# to spread over more than the cache's 2 s.
urls=()
for i in $(seq 20); do urls+=(-o /dev/null "$PORTAL/sbv1/sandboxes/$A/thumbnail"); done
curl -s -Z --parallel-max 20 --parallel-immediate -H "Authorization: Bearer $U1" "${urls[@]}"
f1=$(tcount fetched) c1=$(tcount cached)
check "20 dashboards asking at once cost the sandbox one picture ($((f1 - f0)) fetched, $((c1 - c0)) shared)" \
	test "$((f1 - f0))" = 1 -a "$((c1 - c0))" = 19
f0=$(tcount fetched) t0=$(now_ms)
for w in 100 101 102 103 104 100; do th "$U1" "$A" "?width=$w" >/dev/null; done
f1=$(tcount fetched)
check "4 widths of a sandbox are kept: a 5th drops the oldest, which is fetched again ($((f1 - f0)) of 6 in $(($(now_ms) - t0)) ms)" \
	test "$((f1 - f0))" = 6

# --- the page -------------------------------------------------------------------------
hdr() { curl -s -o /dev/null -D - "$PORTAL$1" | tr -d '\r' | tr 'A-Z' 'a-z'; }
export -f hdr
check "/, /ui/app.js and /ui/app.css: their content types, no-cache, a CSP without inline script" \
	bash -c 'for f in "/ text/html" "/ui/app.js text/javascript" "/ui/app.css text/css"; do
		h=$(hdr "${f% *}"); grep -q "^http/1.1 200" <<<"$h" && grep -q "^content-type: ${f#* }" <<<"$h" &&
		grep -q "^cache-control: no-cache" <<<"$h" && grep -q "^content-security-policy: default-src .none.; script-src .self.;" <<<"$h" &&
		! grep -q "unsafe-inline" <<<"$h" || exit 1; done'
check "... and no inline script or style in the page" \
	bash -c '! curl -s "$1/" | grep -Eiq "<script>|<script [^>]*>[^<]|<style|style=|onclick="' _ "$PORTAL"
check "/ui/other: 404" bash -c '[[ $(curl -s -o /dev/null -w "%{http_code}" "$1/ui/other.js") == 404 ]]' _ "$PORTAL"
# The screenshots replace those in $shots only when the whole page test passed.
shots=${CLOCHE_DASHBOARD_SHOTS:-docs/img}
mkdir -p "$shots" "$STACK_WORK/shots"
node tests/e2e/dashboard-test.mjs --portal "$PORTAL" --key "$U1" --sandbox "$A" --token "$TA" \
	--browser-url "$BURL" --desktop-url "$DURL" --other "$B" --admin "$ADMIN" --shots "$STACK_WORK/shots" 2>&1
rc=$?
check "tests/e2e/dashboard-test.mjs ran and passed (status $rc)" test "$rc" = 0
# What the portal says of the pictures it could not get, when the page saw an error.
[[ $rc == 0 ]] || grep -h '"thumbnail failed"' "$STACK_WORK/portal.log" | tail -n 5 | sed 's/^/# /'
check "the screenshots are written (laptop, detail, recordings, phone, nodes) to $shots" \
	bash -c '[[ $3 == 0 ]] || exit 1; for f in laptop detail recordings phone nodes; do
		file "$1/dashboard-$f.png" | grep -q "PNG image data" && cp "$1/dashboard-$f.png" "$2/" || exit 1; done' \
	_ "$STACK_WORK/shots" "$shots" "$rc"

for id in "$A" "$B"; do curl -s -X POST -H "Authorization: Bearer $ADMIN" "$PORTAL/sbv1/sandboxes/$id/release" >/dev/null; done
check "every leased sandbox is released (the warm member stays)" \
	wait_for 30 node_lists_none '[.sandboxes[] | select(.pooled | not)] | length'
stack_down
tap_exit
