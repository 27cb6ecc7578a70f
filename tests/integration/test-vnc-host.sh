#!/usr/bin/env bash
# Integration test of cloche-vnc on the host (no sandbox): a private Xvfb
# with Chromium showing a test page, cloche-vnc on free ports, and real
# clients (Debian's vncsnapshot, our libvncclient-based vnc-client, noVNC
# in headless Chromium, xclip, mcp-desktop) checking frames, input, the web
# port, the clipboard both ways (and CLOCHE_CLIPBOARD=off), idle CPU,
# authentication, view-only mode, viewer resize (noVNC's remote resize,
# xrandr, mcp-desktop's size) and shutdown.
#
# Run after `make`: BUILD=build (default; relative to the repository root)
# selects the build directory.  Prints `ok - NAME` / `not ok - NAME` lines and exits
# non-zero if any check failed.  Every process it starts is stopped on exit.
# sanitize: yes
# lane: host
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/x11.sh

BUILD=${BUILD:-build}
VNC=$BUILD/bin/cloche-vnc
CLIENT=$BUILD/tests/tools/vnc-client
WIDTH=1280
HEIGHT=800
PIDS=()   # processes to stop, newest last
PGIDS=()  # process groups (Chromium and its helpers)

WORK=$(mktemp -d /tmp/test-vnc-host.XXXXXX)

cleanup() {
	local pid i
	for ((i = ${#PGIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM -- "-${PGIDS[i]}" 2>/dev/null
	done
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[i]}" 2>/dev/null
	done
	for i in $(seq 30); do
		local alive=0
		for pid in "${PIDS[@]}" "${PGIDS[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for pid in "${PGIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
	wait 2>/dev/null
	if [ "$TAP_FAILED" != 0 ] && [ -f "$WORK/vnc.log" ]; then
		echo "# last lines of the cloche-vnc log:"
		grep -v '"level":"debug"' "$WORK/vnc.log" | tail -15 | sed 's/^/#   /'
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

log_has() { grep -q -- "$1" "$WORK/vnc.log"; }

# The real Debian viewer, and a decoder for its JPEG: prints the number of
# distinct colours (capped at 50) and the RGB of pixel (x, y).
snapshot_info() { # snapshot_info FILE X Y
	djpeg -pnm "$1" >"$WORK/snap.ppm" || return 1
	local colours px
	colours=$(tail -c $((WIDTH * HEIGHT * 3)) "$WORK/snap.ppm" | od -An -v -tu1 -w3 |
		awk '!seen[$0]++ { n++ } n >= 50 { exit } END { print n + 0 }')
	px=$(tail -c $((WIDTH * HEIGHT * 3)) "$WORK/snap.ppm" |
		od -An -tu1 -j $((($3 * WIDTH + $2) * 3)) -N3 | xargs)
	echo "$colours $px"
}

json_field() { # json_field JSON NAME: a number/boolean field of a flat JSON line
	sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" <<<"$1"
}

# ---------------------------------------------------------------- set-up
for tool in Xvfb chromium vncsnapshot xdotool xclip xrandr djpeg curl node; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "prerequisites" "$tool is not installed"
		exit 1
	fi
done
if [ ! -x "$VNC" ] || [ ! -x "$CLIENT" ]; then
	not_ok "prerequisites" "build $VNC and $CLIENT first (make)"
	exit 1
fi

"$VNC" --bogus-flag >/dev/null 2>&1
check "a bad flag exits 2" test $? = 2
"$VNC" --help | grep -q -- "--password-file"
check "--help describes the flags" test $? = 0

DISP=$(x_free_display 90 199) || { not_ok "free X display"; exit 1; }
Xvfb "$DISP" -screen 0 ${WIDTH}x${HEIGHT}x24 -nolisten tcp -noreset >"$WORK/xvfb.log" 2>&1 &
XVFB_PID=$!
PIDS+=("$XVFB_PID")
if ! wait_for 15 xdpyinfo -display "$DISP" >/dev/null 2>&1; then
	not_ok "Xvfb starts on $DISP" "$(tail -3 "$WORK/xvfb.log")"
	exit 1
fi
export DISPLAY=$DISP

read -r RFB HTTP < <(free_ports 2)
"$VNC" --display "$DISP" --listen 127.0.0.1 --rfb-port "$RFB" --http-port "$HTTP" \
	--log-level debug 2>"$WORK/vnc.log" &
VNC_PID=$!
PIDS+=("$VNC_PID")
if wait_for 15 log_has '"msg":"cloche-vnc started"'; then
	ok "cloche-vnc starts on $DISP, RFB $RFB, HTTP $HTTP"
else
	not_ok "cloche-vnc starts" "$(tail -3 "$WORK/vnc.log")"
	exit 1
fi

# The test page: a blue background (probed for colour order), a text field
# whose value goes to the window title, so typing can be read back exactly.
cat >"$WORK/page.html" <<'EOF'
<html><head><title>T:</title></head>
<body style="background:#3060a0;color:#fff;font:32px sans-serif;margin:40px">
<h1>cloche-vnc test</h1>
<input id=i style="font:32px monospace;width:900px"
 oninput="document.title='T:'+this.value;document.getElementById('o').textContent=this.value">
<div id=o style="font:48px sans-serif;margin-top:30px"></div></body></html>
EOF
PAGE="data:text/html;base64,$(base64 -w0 "$WORK/page.html")"
setsid chromium "${X_CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/profile" \
	--window-size=$WIDTH,$HEIGHT --window-position=0,0 "$PAGE" >"$WORK/chromium.log" 2>&1 &
PGIDS+=($!)

find_window() { WID=$(xdotool search --name '^T:' 2>/dev/null | head -1) && [ -n "$WID" ]; }
if ! wait_for 60 find_window; then
	not_ok "Chromium shows the test page"
	exit 1
fi
# Painted when the background colour appears where the page is.
painted() {
	"$CLIENT" --port "$RFB" --stats --probe 1200,700 --timeout 10 2>/dev/null |
		grep -q '"probe":\[48,96,160\]'
}
if wait_for 60 painted; then
	ok "Chromium shows the test page"
else
	not_ok "Chromium shows the test page"
	exit 1
fi
sleep 2 # let the page settle (fonts, first paints)

# ---------------------------------------------------------------- idle CPU
idle_check() { # idle_check NAME: cloche-vnc CPU over 5 s below 5% of a core
	local hz t0 t1 pct
	hz=$(getconf CLK_TCK)
	t0=$(cpu_ticks "$VNC_PID")
	sleep 5
	t1=$(cpu_ticks "$VNC_PID")
	pct=$(((t1 - t0) * 100 * 100 / (hz * 5)))
	if [ $pct -lt 500 ]; then
		ok "$1 ($((pct / 100)).$(printf %02d $((pct % 100)))% of a core)"
	else
		not_ok "$1" "cloche-vnc used $((t1 - t0)) ticks in 5 s"
	fi
}
idle_check "idle CPU with no viewer is near 0"
"$CLIENT" --port "$RFB" --hold 8 >/dev/null 2>&1 &
HOLD_PID=$!
PIDS+=("$HOLD_PID")
sleep 2
idle_check "idle CPU with a viewer connected is near 0"
wait "$HOLD_PID" 2>/dev/null

# ---------------------------------------------------------------- frames
if timeout 30 vncsnapshot -quiet "127.0.0.1::$RFB" "$WORK/snap.jpg" >/dev/null 2>&1 &&
	info=$(snapshot_info "$WORK/snap.jpg" 1200 700); then
	read -r colours r g b <<<"$info"
	check "vncsnapshot gets a frame that is not uniform ($colours+ colours)" test "$colours" -gt 10
	# JPEG is lossy: allow a few levels around #3060a0.
	if [ $((r - 48)) -ge -6 ] && [ $((r - 48)) -le 6 ] && [ $((b - 160)) -ge -6 ] &&
		[ $((b - 160)) -le 6 ] && [ $((g - 96)) -ge -6 ] && [ $((g - 96)) -le 6 ]; then
		ok "vncsnapshot sees the right colours (no red/blue swap)"
	else
		not_ok "vncsnapshot sees the right colours" "pixel is $r,$g,$b, want 48,96,160"
	fi
else
	not_ok "vncsnapshot gets a frame"
fi

stats=$("$CLIENT" --port "$RFB" --stats --probe 1200,700 --snapshot "$WORK/frame.png")
check "vnc-client gets a full frame that is not uniform" \
	test "$(json_field "$stats" uniform)" = false -a "$(json_field "$stats" colors)" -gt 10
check "vnc-client sees the page background exactly" grep -q '"probe":\[48,96,160\]' <<<"$stats"
check "vnc-client writes a PNG" test "$(head -c 4 "$WORK/frame.png" | tail -c 3)" = PNG

# ---------------------------------------------------------------- web port
hdrs=$(curl -s -D - -o /dev/null "http://127.0.0.1:$HTTP/")
check "GET / redirects to noVNC with autoconnect and scaling" \
	grep -qi '^Location: vnc.html?autoconnect=1&resize=scale' <<<"$hdrs"
page=$(curl -s -D - "http://127.0.0.1:$HTTP/vnc.html")
check "GET /vnc.html serves noVNC with cloche's defaults" \
	bash -c 'grep -q "^HTTP/1.1 200" <<<"$1" && grep -qi "^Content-Type: text/html" <<<"$1" &&
		grep -q "cloche-vnc" <<<"$1" && grep -q "noVNC" <<<"$1"' _ "$page"
check "no page of the desktop can be framed by another site (X-Frame-Options, CSP frame-ancestors)" \
	bash -c 'grep -qi "^X-Frame-Options: DENY" <<<"$1" &&
		grep -qi "^Content-Security-Policy: frame-ancestors .none." <<<"$1"' _ "$page"
check "... nor does the link with the secret leak it as a referrer" \
	grep -qi '^Referrer-Policy: no-referrer' <<<"$hdrs"
js=$(curl -s -D - -o /dev/null "http://127.0.0.1:$HTTP/core/rfb.js")
check "JavaScript modules are served as application/javascript" \
	grep -qi '^Content-Type: application/javascript' <<<"$js"
code=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP/../../etc/passwd")
check "paths outside the web directory are refused" test "$code" = 404

# noVNC itself, in a browser, over the web port's WebSocket.
timeout 60 chromium --headless "${X_CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/profile-headless" \
	--window-size=1280,900 --virtual-time-budget=8000 --screenshot="$WORK/novnc.png" \
	"http://127.0.0.1:$HTTP/" >"$WORK/headless.log" 2>&1 &
HEADLESS_PID=$!
PIDS+=("$HEADLESS_PID")
if wait_for 60 log_has '"transport":"websocket"'; then
	ok "noVNC in Chromium connects through the web port's WebSocket"
else
	not_ok "noVNC in Chromium connects through the web port's WebSocket"
fi
wait "$HEADLESS_PID" 2>/dev/null

# ---------------------------------------------------------------- clipboard
# noVNC in headless Chromium against the X clipboard, set and read with
# xclip and with mcp-desktop's clipboard tools (the same selection module).
MCP=$BUILD/bin/mcp-desktop
MCP_PORT=$(free_port)
"$MCP" --display "$DISP" --listen 127.0.0.1 --port "$MCP_PORT" 2>"$WORK/mcp.log" &
MCP_PID=$!
PIDS+=("$MCP_PID")
wait_for 15 listening "$MCP_PORT" ||
	not_ok "mcp-desktop starts beside cloche-vnc" "$(tail -3 "$WORK/mcp.log")"
clip_test() { # clip_test HTTP_PORT [--off 1]: the e2e script's lines, indented
	local port=$1
	shift
	node tests/e2e/novnc-clipboard-test.mjs --url "http://127.0.0.1:$port/" --display "$DISP" \
		--mcp "http://127.0.0.1:$MCP_PORT/mcp" "$@" >"$WORK/clip.txt" 2>&1
	local status=$?
	sed 's/^/# /' "$WORK/clip.txt"
	return $status
}
check "clipboard both ways between noVNC and the X display (xclip, clipboard_set, panel, API)" clip_test "$HTTP"
check "... a viewer's text over 1 MiB is refused with a log line" \
	log_has "refused a viewer's clipboard text over the limit"
got=$(node tests/e2e/mcp-call.mjs --url "http://127.0.0.1:$MCP_PORT/mcp" --tool clipboard_get)
check "mcp-desktop's clipboard_get reads what noVNC pasted (got '$got')" grep -q '^clipboardPasteFrom' <<<"$got"
# ctrl+v in Chromium pastes it (the field's value is the window title),
# then the field is emptied again for the typing checks below.
"$CLIENT" --port "$RFB" --click 500,265 --key ctrl+a --key BackSpace --key ctrl+v >/dev/null
pasted() { [ "$(xdotool getwindowname "$WID" | sed 's/^T://; s/ - Chromium$//')" = "$got" ]; }
check "ctrl+v in Chromium pastes a viewer's text" wait_for 10 pasted
"$CLIENT" --port "$RFB" --click 500,265 --key ctrl+a --key BackSpace >/dev/null
# A plain RFB viewer (vnc-client on libvncclient, no extended clipboard):
# Latin-1 both ways, `?` for characters Latin-1 lacks.
"$CLIENT" --port "$RFB" --paste 'from a VNC client: naïve ½' >/dev/null
got=$(timeout 3 xclip -o -selection clipboard)
check "a plain RFB viewer's cut text becomes the X clipboard (got '$got')" \
	test "$got" = 'from a VNC client: naïve ½'
rm -f "$WORK/cut.txt"
"$CLIENT" --port "$RFB" --sleep 2500 --cut-text "$WORK/cut.txt" >/dev/null &
CUT_PID=$!
sleep 1
printf 'copied for RFB: café € 日本' | xclip -selection clipboard
wait "$CUT_PID"
got=$(cat "$WORK/cut.txt" 2>/dev/null)
check "a plain RFB viewer gets a copy in Latin-1 (got '$got')" test "$got" = 'copied for RFB: café ? ??'
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' a | xclip -selection clipboard 2>/dev/null
check "a copy over 1 MiB in the sandbox is not sent, with a log line" \
	wait_for 5 log_has "the clipboard's new text was not read"

HTTP4=$(free_port)
CLOCHE_CLIPBOARD=off "$VNC" --display "$DISP" --listen 127.0.0.1 --rfb-port 0 \
	--http-port "$HTTP4" 2>"$WORK/vnc4.log" &
PIDS+=($!)
if wait_for 15 grep -q '"msg":"cloche-vnc started"' "$WORK/vnc4.log"; then
	check "CLOCHE_CLIPBOARD=off: nothing crosses either way" clip_test "$HTTP4" --off 1
else
	not_ok "an instance with CLOCHE_CLIPBOARD=off starts"
fi
# ---------------------------------------------------------------- control
# The control lease between people in noVNC pages and mcp-desktop: watch,
# take control, the agent's refused click, request_human_help answered by
# the hand-back note, and a page that went away losing control.
node tests/e2e/novnc-control-test.mjs --url "http://127.0.0.1:$HTTP/" --display "$DISP" \
	--mcp "http://127.0.0.1:$MCP_PORT/mcp" --grace 1 >"$WORK/control.txt" 2>&1
check "the control lease: take over, the agent refused, help answered, hand back" test $? = 0
sed 's/^/# /' "$WORK/control.txt"
check "... the hand-over is logged" log_has '"msg":"a person handed control back"'
kill -TERM "$MCP_PID" # its keymap bindings stay out of the typing checks
wait "$MCP_PID" 2>/dev/null
check "mcp-desktop exits 0 on SIGTERM after the clipboard checks" test $? = 0

# ---------------------------------------------------------------- input
"$CLIENT" --port "$RFB" --move 640,400 >/dev/null
loc=$(xdotool getmouselocation)
check "pointer motion moves the X pointer ($loc)" grep -q '^x:640 y:400 ' <<<"$loc"

title() { xdotool getwindowname "$WID" | sed 's/^T://; s/ - Chromium$//'; }
typed() { [ "$(title)" = "$1" ]; }
TEXT='Hello, World! é€ü ÀÇ 日本語 ~@#$%^&*()_+{}|:"<>?'
stats=$("$CLIENT" --port "$RFB" --click 500,265 --type "$TEXT" --stats --after 800)
if wait_for 10 typed "$TEXT"; then
	ok "click and typing arrive exactly, shifted and non-ASCII characters included"
else
	not_ok "click and typing arrive exactly" "got '$(title)', want '$TEXT'"
fi
changed=$(json_field "$stats" changed_pixels)
check "the viewer sees the frame change after input ($changed pixels)" test "${changed:-0}" -gt 100

"$CLIENT" --port "$RFB" --key ctrl+a --key BackSpace --type-raw 'Raw!A' >/dev/null
if wait_for 10 typed 'Raw!A'; then
	ok "bare shifted keysyms (no Shift from the viewer) type the right characters"
else
	not_ok "bare shifted keysyms type the right characters" "got '$(title)'"
fi
"$CLIENT" --port "$RFB" --key ctrl+a --key BackSpace --type abcd --key shift+Left \
	--key shift+Left --type Z >/dev/null
if wait_for 10 typed 'abZ'; then
	ok "Shift with function keys is kept (shift+Left selects)"
else
	not_ok "Shift with function keys is kept" "got '$(title)'"
fi

# ---------------------------------------------------------------- agent pointer
# xdotool moves and clicks the X pointer the way mcp-desktop does (XTest);
# noVNC in headless Chromium must show the pointer there and a click ring.
# Both places are plain page background, right of the text.
node tests/e2e/novnc-pointer-test.mjs --url "http://127.0.0.1:$HTTP/" --from 700,560 \
	--to 1000,650 --pid "$VNC_PID" --out "$WORK" >"$WORK/pointer.txt" 2>&1
tap_relay <"$WORK/pointer.txt"
check "noVNC pointer test ran to the end" grep -q 'viewer A gets no ring' "$WORK/pointer.txt"

# ---------------------------------------------------------------- auth, view-only
RFB2=$(free_port)
printf 'secret12\n' >"$WORK/password"
printf 'wrong\n' >"$WORK/wrong"
"$VNC" --display "$DISP" --listen 127.0.0.1 --rfb-port "$RFB2" --http-port 0 \
	--password-file "$WORK/password" --view-only 2>"$WORK/vnc2.log" &
VNC2_PID=$!
PIDS+=("$VNC2_PID")
if wait_for 15 grep -q '"msg":"cloche-vnc started"' "$WORK/vnc2.log"; then
	"$CLIENT" --port "$RFB2" --password-file "$WORK/wrong" --timeout 5 >/dev/null 2>&1
	check "--password-file: a wrong password is refused" test $? = 1
	before=$(title)
	"$CLIENT" --port "$RFB2" --password-file "$WORK/password" --type 'xyz' >/dev/null 2>&1
	check "--password-file: the right password gets a frame" test $? = 0
	sleep 0.5
	check "--view-only ignores input" test "$(title)" = "$before"
else
	not_ok "second instance with --password-file --view-only starts"
fi

# ---------------------------------------------------------------- WebSocket guard
# ws_code PORT PATH [HEADER...]: the status a WebSocket handshake gets.
ws_code() {
	local port=$1 path=$2
	shift 2
	curl -s -o /dev/null -m 5 -w '%{http_code}' -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
		"$@" "http://127.0.0.1:$port$path"
}
check "no secret: a WebSocket from a foreign Origin gets 403" \
	test "$(ws_code "$HTTP" /websockify -H 'Origin: http://evil.example.com')" = 403
check "no secret: a foreign Host gets 403" \
	test "$(ws_code "$HTTP" /websockify -H 'Host: evil.example.com')" = 403
check "no secret: a 300-character Host gets 403" \
	test "$(ws_code "$HTTP" /websockify -H "Host: $(printf 'a%.0s' {1..300}).example.com")" = 403

read -r RFB3 HTTP3 < <(free_ports 2)
SECRET=Zx9_k-2PqLmN4tVw8yB1cD0e
CLOCHE_VNC_SECRET=$SECRET "$VNC" --display "$DISP" --listen 127.0.0.1 --rfb-port "$RFB3" \
	--http-port "$HTTP3" --allowed-hosts '*.cloche.localhost' --log-level debug 2>"$WORK/vnc3.log" &
VNC3_PID=$!
PIDS+=("$VNC3_PID")
if wait_for 15 grep -q '"msg":"cloche-vnc started"' "$WORK/vnc3.log"; then
	origin="Origin: http://127.0.0.1:$HTTP3"
	check "secret: a foreign Origin gets 403 even with the secret" \
		test "$(ws_code "$HTTP3" "/websockify?secret=$SECRET" -H 'Origin: http://evil.example.com')" = 403
	check "secret: no secret gets 401" test "$(ws_code "$HTTP3" /websockify -H "$origin")" = 401
	check "secret: a wrong secret gets 403" \
		test "$(ws_code "$HTTP3" "/websockify?secret=${SECRET}x" -H "$origin")" = 403
	check "secret: the right secret and an allowed Origin get 101" \
		test "$(ws_code "$HTTP3" "/websockify?secret=$SECRET" -H "$origin")" = 101
	check "secret: an allowed proxy name (*.cloche.localhost) gets 101" \
		test "$(ws_code "$HTTP3" "/websockify?secret=$SECRET" -H "Host: 6080-sb-1.cloche.localhost" \
			-H "Origin: http://6080-sb-1.cloche.localhost")" = 101
	check "secret: the process environment no longer shows it" \
		bash -c '! tr "\0" "\n" </proc/$1/environ | grep -q "$2"' _ "$VNC3_PID" "$SECRET"
	# The RFB port speaks RFB only: a WebSocket there skipped every check above.
	ws_code "$RFB3" "/?secret=$SECRET" -H "$origin" >/dev/null
	check "a WebSocket on the RFB port is refused" \
		wait_for 5 grep -q 'refused a WebSocket on the RFB port' "$WORK/vnc3.log"
	printf '%s\n' "$SECRET" >"$WORK/secret"
	"$CLIENT" --port "$RFB3" --timeout 5 >/dev/null 2>&1
	check "secret: an RFB client without the password is refused" test $? = 1
	"$CLIENT" --port "$RFB3" --password-file "$WORK/secret" --timeout 10 >/dev/null 2>&1
	check "secret: an RFB client with it as the VNC password gets a frame" test $? = 0
	# The clipboard goes to viewers with control, not to those who watch
	# (the view secret's login), and a watcher's cut text is dropped.
	printf 'cloche-vnc view-only' | openssl dgst -sha256 -hmac "$SECRET" -binary | base64 -w0 |
		tr '+/' '-_' | tr -d '=' | cut -c1-32 >"$WORK/view"
	"$CLIENT" --port "$RFB3" --password-file "$WORK/secret" --sleep 2500 \
		--cut-text "$WORK/cut-ctl.txt" >/dev/null 2>&1 &
	p1=$!
	"$CLIENT" --port "$RFB3" --password-file "$WORK/view" --sleep 2500 \
		--cut-text "$WORK/cut-view.txt" >/dev/null 2>&1 &
	p2=$!
	sleep 1
	printf 'for control only %s' $$ | xclip -selection clipboard
	wait "$p1" "$p2"
	check "a copy reaches a viewer with control ($(cat "$WORK/cut-ctl.txt" 2>/dev/null)), not a watcher" \
		test "$(cat "$WORK/cut-ctl.txt" 2>/dev/null)" = "for control only $$" -a ! -e "$WORK/cut-view.txt"
	"$CLIENT" --port "$RFB3" --password-file "$WORK/view" --paste 'from a watcher' >/dev/null 2>&1
	check "a watcher's cut text does not reach the clipboard" \
		test "$(timeout 3 xclip -o -selection clipboard)" = "for control only $$"
	hdrs=$(curl -s -D - -o /dev/null "http://127.0.0.1:$HTTP3/?secret=$SECRET")
	check "GET /?secret= redirects to noVNC with the WebSocket path and the password" \
		grep -qi "^Location: vnc.html?secret=$SECRET&path=websockify%3Fsecret%3D$SECRET&password=$SECRET&autoconnect=1" <<<"$hdrs"
	# One click: noVNC in a real browser, from the short link alone.
	node tests/e2e/novnc-test.mjs --url "http://127.0.0.1:$HTTP3/?secret=$SECRET" \
		--out "$WORK" >"$WORK/novnc3.txt" 2>&1
	check "noVNC in headless Chromium connects with the secret from one link" \
		grep -q '^ok - noVNC connects' "$WORK/novnc3.txt"
	check "... and that was a WebSocket through the web port" \
		grep -q '"transport":"websocket"' "$WORK/vnc3.log"
else
	not_ok "an instance with CLOCHE_VNC_SECRET starts"
fi

# ---------------------------------------------------------------- resize
# A second display whose Xvfb starts at the largest size to allow (Xvfb's
# RandR never grows past it), served by cloche-vnc with resizing on (the
# sandbox's switch, CLOCHE_VNC_RESIZE) and the default size 1280x800, and
# by a second instance with --resize off; Chromium full-screen on it with a
# page that puts where it was clicked into its title; mcp-desktop beside.
resize_section() {
	local disp2 rfb5 http5 http6 wid5 vnc5 vnc6 mcp5 mcp5_port status
	disp2=$(x_free_display $((${DISP#:} + 1)) 199) || { not_ok "a second free X display"; return; }
	Xvfb "$disp2" -screen 0 2560x1600x24 -nolisten tcp -noreset >"$WORK/xvfb2.log" 2>&1 &
	PIDS+=($!)
	wait_for 15 xdpyinfo -display "$disp2" >/dev/null 2>&1 || { not_ok "Xvfb 2560x1600 starts"; return; }
	read -r rfb5 http5 http6 < <(free_ports 3)
	# (a libvncserver leak on every successful resize: see the suppressions file)
	LSAN_OPTIONS=suppressions=$PWD/tests/integration/lsan-libvncserver.supp:print_suppressions=0 \
		CLOCHE_VNC_RESIZE=on CLOCHE_VNC_SECRET=$SECRET "$VNC" --display "$disp2" --listen 127.0.0.1 \
		--rfb-port "$rfb5" --http-port "$http5" --size 1280x800 2>"$WORK/vnc5.log" &
	vnc5=$!
	PIDS+=("$vnc5")
	wait_for 15 grep -q '"msg":"cloche-vnc started"' "$WORK/vnc5.log" ||
		{ not_ok "cloche-vnc with CLOCHE_VNC_RESIZE=on starts"; return; }
	check "--size 1280x800 sets the desktop's default size on a 2560x1600 Xvfb" \
		bash -c 'xdpyinfo -display "$1" | grep -q "dimensions: *1280x800 pixels"' _ "$disp2"
	"$VNC" --display "$disp2" --listen 127.0.0.1 --rfb-port 0 --http-port "$http6" --resize off \
		--size 1280x800 2>"$WORK/vnc6.log" &
	vnc6=$!
	PIDS+=("$vnc6")
	wait_for 15 grep -q '"msg":"cloche-vnc started"' "$WORK/vnc6.log" ||
		{ not_ok "cloche-vnc with --resize off starts"; return; }
	cat >"$WORK/click.html" <<'EOF2'
<html><head><title>R:</title></head><body style="background:#204060;margin:0">
<script>onmousedown = (e) => { document.title = 'C:' + e.clientX + ',' + e.clientY; };</script>
</body></html>
EOF2
	DISPLAY=$disp2 setsid chromium "${X_CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/profile5" \
		--window-size=1280,800 --window-position=0,0 \
		"data:text/html;base64,$(base64 -w0 "$WORK/click.html")" >"$WORK/chromium5.log" 2>&1 &
	PGIDS+=($!)
	find_click_window() { wid5=$(DISPLAY=$disp2 xdotool search --name '^R:' 2>/dev/null | head -1) && [ -n "$wid5" ]; }
	wait_for 60 find_click_window || { not_ok "Chromium shows the click page on $disp2"; return; }
	mcp5_port=$(free_port)
	"$BUILD/bin/mcp-desktop" --display "$disp2" --listen 127.0.0.1 --port "$mcp5_port" 2>"$WORK/mcp5.log" &
	mcp5=$!
	PIDS+=("$mcp5")
	wait_for 15 listening "$mcp5_port" || not_ok "mcp-desktop starts on $disp2"
	sleep 2 # the page's first paint

	# Another program resizing the screen (xrandr inside a sandbox) is
	# followed too, without a restart.
	if command -v xrandr >/dev/null; then
		xrandr -display "$disp2" --fb 1600x1000 2>/dev/null
		check "cloche-vnc follows an xrandr resize to 1600x1000 (a viewer gets that frame)" \
			bash -c '"$1" --port "$2" --password-file "$3" --stats --timeout 10 | grep -q "\"width\":1600,\"height\":1000"' \
			_ "$CLIENT" "$rfb5" "$WORK/secret"
		xrandr -display "$disp2" --fb 1280x800 2>/dev/null
		wait_for 5 bash -c 'xdpyinfo -display "$1" | grep -q "dimensions: *1280x800 pixels"' _ "$disp2"
	else
		not_ok "xrandr is installed (x11-xserver-utils)"
	fi

	DISPLAY=$disp2 node tests/e2e/novnc-resize-test.mjs \
		--url "http://127.0.0.1:$http5/?secret=$SECRET" \
		--view-url "http://127.0.0.1:$http5/?view=$(cat "$WORK/view")" \
		--off-url "http://127.0.0.1:$http6/" --display "$disp2" --default 1280x800 \
		--window "$wid5" --mcp "http://127.0.0.1:$mcp5_port/mcp" --pid "$vnc5" \
		--log "$WORK/vnc5.log" >"$WORK/resize.txt" 2>&1
	tap_relay <"$WORK/resize.txt"
	check "noVNC resize test ran to the end" grep -q 'answers each SetDesktopSize' "$WORK/resize.txt"
	grep '"msg":"desktop size requested"' "$WORK/vnc5.log" | sed -n 's/.*"width":\([0-9]*\),"height":\([0-9]*\).*"status":"\([^"]*\)".*"ms":\([0-9]*\).*/#   request \1x\2: \3 in \4 ms (server side)/p'
	kill -TERM -- "-${PGIDS[-1]}" 2>/dev/null
	for pid in "$mcp5:mcp5:mcp-desktop" "$vnc5:vnc5:cloche-vnc --resize on" "$vnc6:vnc6:cloche-vnc --resize off"; do
		kill -TERM "${pid%%:*}"
		wait "${pid%%:*}"
		status=$?
		check "$(cut -d: -f3 <<<"$pid") of the resize section exits 0 on SIGTERM (status $status)" test "$status" = 0
		[ "$status" = 0 ] ||
			grep -v '"level":"debug"' "$WORK/$(cut -d: -f2 <<<"$pid").log" | tail -15 | sed 's/^/#   /'
	done
}
if [ -n "${RFB3:-}" ] && [ -s "$WORK/view" ]; then
	resize_section
else
	not_ok "the resize section needs the secret instance's ports and view secret"
fi

# ---------------------------------------------------------------- rekey
# What a fork child's node does before the child is handed out: the secret
# in force buys a new one; the old secret, its view secret and its VNC
# password stop working, the new ones work.
if [ -n "${HTTP3:-}" ] && kill -0 "$VNC3_PID" 2>/dev/null; then
	NEW=nEw-5ecret_of-a-child-0123
	rekey() { # SECRET-IN-FORCE NEW [METHOD]: the status of a rekey
		curl -s -o /dev/null -m 5 -w '%{http_code}' -X "${3:-POST}" -H "X-Cloche-Secret: $1" \
			-H "X-Cloche-New-Secret: $2" "http://127.0.0.1:$HTTP3/cloche/rekey"
	}
	check "rekey: a wrong secret in force 403, no new secret 400, a GET 405" \
		test "$(rekey "${SECRET}x" "$NEW") $(rekey "$SECRET" '') $(rekey "$SECRET" "$NEW" GET)" = "403 400 405"
	check "rekey: the secret in force and a new one 200" test "$(rekey "$SECRET" "$NEW")" = 200
	origin="Origin: http://127.0.0.1:$HTTP3"
	check "rekey: the old secret and its view secret open no WebSocket (403), the new ones do (101)" \
		test "$(ws_code "$HTTP3" "/websockify?secret=$SECRET" -H "$origin") $(ws_code "$HTTP3" "/websockify?view=$(cat "$WORK/view")" -H "$origin") $(ws_code "$HTTP3" "/websockify?secret=$NEW" -H "$origin") $(ws_code "$HTTP3" "/websockify?view=$(printf 'cloche-vnc view-only' | openssl dgst -sha256 -hmac "$NEW" -binary | base64 -w0 | tr '+/' '-_' | tr -d '=' | cut -c1-32)" -H "$origin")" = "403 403 101 101"
	printf '%s\n' "$NEW" >"$WORK/secret-new"
	"$CLIENT" --port "$RFB3" --password-file "$WORK/secret" --timeout 5 >/dev/null 2>&1
	old_rfb=$?
	"$CLIENT" --port "$RFB3" --password-file "$WORK/secret-new" --timeout 10 >/dev/null 2>&1
	check "rekey: the RFB port refuses the old password ($old_rfb) and takes the new one" \
		test "$old_rfb $?" = "1 0"
	check "rekey: the old secret no longer rekeys (403)" test "$(rekey "$SECRET" "$NEW")" = 403
else
	not_ok "the rekey section needs the secret instance"
fi

# ---------------------------------------------------------------- restart
# In a sandbox any X client may kill cloche-vnc's X connection
# (XKillClient): it exits and init starts it again the same way, with the
# environment's secret.  With --state-dir a person who held control keeps
# it through that, and the secret a rekey put in force stays in force.
# Here the agent's own attack (tests/lib/agent-attack.py) kills the
# connection, and the test starts cloche-vnc again as init would.
restart_section() {
	local disp3 port mport vpid hold helper old=Qq1_restart-secret-0123 new=Nn2_restart-secret-4567
	local key=0123456789abcdef0123456789abcdef st="$WORK/restart-state"
	disp3=$(x_free_display $((${DISP#:} + 2)) 199) || { not_ok "a third free X display"; return; }
	Xvfb "$disp3" -screen 0 1024x768x24 -nolisten tcp -noreset >"$WORK/restart-xvfb.log" 2>&1 &
	PIDS+=($!)
	wait_for 15 xdpyinfo -display "$disp3" >/dev/null 2>&1 || { not_ok "Xvfb on $disp3 starts"; return; }
	# mcp-desktop waits for a person through the restart (it is no target)
	mport=$(free_port)
	"$MCP" --display "$disp3" --listen 127.0.0.1 --port "$mport" 2>"$WORK/restart-mcp.log" &
	PIDS+=($!)
	wait_for 15 listening "$mport" || { not_ok "mcp-desktop on $disp3 starts"; return; }
	DISPLAY=$disp3 python3 tests/lib/agent-attack.py xclients >"$WORK/restart-x.before"
	mkdir -m 700 "$st"
	port=$(free_port)
	start5() { # start5 N: the Nth start, ready
		CLOCHE_VNC_SECRET=$old "$VNC" --display "$disp3" --listen 127.0.0.1 --rfb-port 0 \
			--http-port "$port" --state-dir "$st" 2>>"$WORK/restart-vnc.log" &
		vpid=$!
		PIDS+=("$vpid")
		wait_for 15 bash -c '(( $(grep -c "cloche-vnc started" "$1") >= $2 ))' _ "$WORK/restart-vnc.log" "$1"
	}
	# hold SECRET: a page's viewer (key $key) connected until the server goes
	hold() {
		python3 tests/lib/ws-viewer.py "$port" "$1" "$key" >"$WORK/restart-hold.out" &
		hold=$!
		PIDS+=("$hold")
		wait_for 5 grep -q . "$WORK/restart-hold.out" && sleep 0.3
	}
	control() { # control SECRET [ACTION]: the lease as the page sees it
		curl -s -m 5 -H "Origin: http://127.0.0.1" ${2:+-X POST} \
			"http://127.0.0.1:$port/cloche/control?secret=$1&viewer=$key${2:+&action=$2}"
	}
	lease() { # lease SECRET [ACTION]: "control you away" of that answer
		control "$@" | jq -r '[.control, (.holder.you | tostring), (.holder.away | tostring)] | join(" ")'
	}
	start5 1 || { not_ok "cloche-vnc with --state-dir starts"; return; }
	hold "$old"
	got=$(lease "$old" take)
	check "restart: a page's viewer connects ($(cat "$WORK/restart-hold.out")) and takes control ($got)" \
		test "$(cat "$WORK/restart-hold.out") $got" = "101 person true false"
	node tests/e2e/mcp-call.mjs --url "http://127.0.0.1:$mport/mcp" --tool request_human_help \
		--args '{"reason":"approve the payment","timeout_s":120}' --timeout-ms 130000 >"$WORK/restart-help.out" 2>&1 &
	helper=$!
	PIDS+=("$helper")
	# shellcheck disable=SC2317  # called by wait_for
	help_shown() { [[ $(control "$old" | jq -r '.help[0].reason') == "approve the payment" ]]; }
	check "restart: the agent asks for a person (request_human_help, shown to the page)" wait_for 10 help_shown
	check "restart: a rekey to a new secret (200)" \
		test "$(curl -s -o /dev/null -m 5 -w '%{http_code}' -X POST -H "X-Cloche-Secret: $old" \
			-H "X-Cloche-New-Secret: $new" "http://127.0.0.1:$port/cloche/rekey")" = 200
	check "restart: the state is a file only cloche-vnc's user reads (0600)" \
		test "$(stat -c %a "$st/state.json")" = 600
	DISPLAY=$disp3 python3 tests/lib/agent-attack.py xkill-new "$WORK/restart-x.before" >"$WORK/restart-xkill.out"
	sed 's/^/# agent: /' "$WORK/restart-xkill.out"
	wait_for 5 exited "$vpid"
	check "restart: the agent's XKillClient ends cloche-vnc (its X connection lost)" \
		bash -c 'grep -q "^xkill client-.* ok" "$1" && ! kill -0 "$2" 2>/dev/null &&
			grep -q "X connection lost" "$3"' _ "$WORK/restart-xkill.out" "$vpid" "$WORK/restart-vnc.log"
	wait "$hold" 2>/dev/null
	start5 2 || { not_ok "cloche-vnc starts again"; return; }
	check "restart: it takes up the earlier run's lease, and its rekey" \
		bash -c 'grep -q "the control lease of an earlier run is taken up" "$1" &&
			grep -q "the secret an earlier run was rekeyed to is in force" "$1"' _ "$WORK/restart-vnc.log"
	grep -q "the secret an earlier run was rekeyed to is in force" "$WORK/restart-vnc.log" ||
		grep -v '"level":"debug"' "$WORK/restart-vnc.log" | tail -12 | sed 's/^/#   /'
	check "restart: the rekeyed secret opens a WebSocket (101), the environment's does not (403)" \
		test "$(ws_code "$port" "/websockify?secret=$new" -H "Origin: http://127.0.0.1") $(ws_code "$port" "/websockify?secret=$old" -H "Origin: http://127.0.0.1")" = "101 403"
	got=$(lease "$new")
	check "restart: the person still holds control, away until their page is back ($got)" \
		test "$got" = "person true true"
	hold "$new"
	got=$(lease "$new")
	check "restart: their page reconnects and has control ($got)" test "$got" = "person true false"
	check "restart: the request is still shown" \
		test "$(control "$new" | jq -r '.help[0].reason')" = "approve the payment"
	check "restart: the person hands back with a note (control: agent)" \
		test "$(control "$new" 'hand_back&note=no%2C%20do%20not%20pay' | jq -r .control)" = agent
	wait "$helper"
	check "restart: the agent's request_human_help, asked again through the restart, gets that note" \
		grep -q "Their note: no, do not pay" "$WORK/restart-help.out"
	sed 's/^/# help: /' "$WORK/restart-help.out" | head -3
}
restart_section

# ---------------------------------------------------------------- shutdown
kill -TERM "$VNC_PID"
t0=$(date +%s%N)
if wait_for 2 exited "$VNC_PID"; then
	wait "$VNC_PID"
	status=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ $status = 0 ] && [ $ms -le 1000 ]; then
		ok "SIGTERM: exit 0 in ${ms} ms"
	else
		not_ok "SIGTERM: exit 0 within 1 s" "status $status after ${ms} ms"
	fi
else
	not_ok "SIGTERM: exit 0 within 1 s" "still running after 2 s"
fi
check "the log has connect and disconnect lines with addresses" \
	bash -c 'grep -q "\"msg\":\"client connected\",\"addr\":\"127.0.0.1:" "$1" &&
		grep -q "\"msg\":\"client disconnected\",\"addr\":\"127.0.0.1:" "$1"' _ "$WORK/vnc.log"

# Losing the X server must end cloche-vnc with a non-zero status so that
# its supervisor restarts it.
kill -TERM "$XVFB_PID"
if wait_for 5 exited "$VNC2_PID"; then
	wait "$VNC2_PID"
	status=$?
	if [ $status != 0 ] && grep -q '"msg":"X connection lost' "$WORK/vnc2.log"; then
		ok "losing the X server exits non-zero ($status) with a log line"
	else
		not_ok "losing the X server exits non-zero with a log line" "status $status"
	fi
else
	not_ok "losing the X server exits non-zero" "still running after 5 s"
fi

tap_exit
