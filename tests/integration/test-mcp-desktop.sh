#!/usr/bin/env bash
# mcp-desktop end to end, with the official MCP SDK client
# (tests/e2e/mcp-desktop-test.mjs):
#
#  1. on the host: a private Xvfb with Chromium showing a page that copies
#     its text field into the window title, mcp-desktop on a free port.
#     Typing through MCP must arrive exactly (non-ASCII, CJK, shifted
#     characters; more distinct characters than there are spare keycodes),
#     read back with xdotool.  The clipboard both ways with xclip, and
#     clipboard_set + ctrl+v pasting exactly into the page.  A second server
#     with --screen-size 1024x640 runs the whole client suite in scaled
#     coordinates (sizes and scale stated, if_changed, clipboard with
#     Chromium); the presets xga, wxga, auto and a WxH give screenshots of
#     their size, --no-pointer leaves the pointer out, and --no-clipboard
#     turns the clipboard tools into errors.
#  2. in a sandbox booted from $CLOCHE_TEMPLATE under runsc: from the router
#     netns, the client suite against http://10.0.2.15:8100/mcp (tools,
#     screenshot of the start page, click + type + clear, cursor, zoom, bad
#     input), the clipboard both ways with the template's xclip, the
#     desktop's size (booted at its default on an Xvfb started larger; a
#     viewer's SetDesktopSize through a cloche-vnc with resizing on, followed
#     by mcp-desktop and by the sandbox's own cloche-vnc, and undone when the
#     viewer leaves), and init brings mcp-desktop back after it is killed.
#
# Prints `ok - ...` / `not ok - ...` lines; exits non-zero on any failure.
# BUILD=build (default) selects the build directory for the host part; with
# another build (make test runs it again with BUILD=build-san) only the host
# part runs, since the sandbox runs the template's binaries.
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/sandbox.sh
. tests/lib/x11.sh

BUILD=${BUILD:-build}
BIN=$BUILD/bin/mcp-desktop
CLIENT=tests/e2e/mcp-desktop-test.mjs
CALL=tests/e2e/mcp-call.mjs
template=${CLOCHE_TEMPLATE:-$(sb_latest_template desktop)}
id="t-mcpd-$$"
WORK=$(mktemp -d /tmp/test-mcp-desktop.XXXXXX)
PIDS=()
PGIDS=()

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p i
	for p in "${PGIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
	# Newest first: the servers before the Xvfb they use.
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null; done
	sleep 0.3
	for p in "${PGIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	((${#PIDS[@]})) && wait "${PIDS[@]}" 2>/dev/null # not the agent: it is a child too
	if ((TAP_FAILED)); then
		for f in "$WORK"/mcp*.log; do
			[[ -s $f ]] || continue
			echo "# last lines of $(basename "$f"):"
			grep -m1 '"keyboard ready"' "$f" | sed 's/^/#   /'
			grep -v '"level":"debug"' "$f" | tail -n 12 | sed 's/^/#   /'
		done
	fi
	sb_down "$id" >/dev/null 2>&1
	sb_agent_stop
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ------------------------------------------------------------------ host
host_part() {
	local disp="" port port2 wid text
	for tool in Xvfb chromium xdotool xclip node; do
		command -v "$tool" >/dev/null || { not_ok "host: $tool is installed"; return; }
	done
	[[ -x $BIN ]] || { not_ok "host: $BIN is built"; return; }
	"$BIN" --bogus >/dev/null 2>&1
	check "a bad flag exits 2" test $? = 2
	"$BIN" --screen-size 12x >/dev/null 2>&1
	check "a malformed --screen-size exits 2" test $? = 2
	"$BIN" --screen-size svga >/dev/null 2>&1
	check "an unknown --screen-size preset exits 2" test $? = 2
	disp=$(x_free_display 140 239) || { not_ok "host: a free X display"; return; }
	Xvfb "$disp" -screen 0 1280x800x24 -nolisten tcp -noreset >"$WORK/xvfb.log" 2>&1 &
	PIDS+=($!)
	wait_for 15 xdpyinfo -display "$disp" >/dev/null 2>&1 || { not_ok "host: Xvfb starts on $disp"; return; }
	cat >"$WORK/page.html" <<-'HTML'
		<html><head><title>T:</title></head>
		<body style="background:#3060a0;margin:40px">
		<input id=i style="font:32px monospace;width:900px;height:60px" autofocus
		 oninput="document.title='T:'+this.value"></body></html>
	HTML
	DISPLAY=$disp setsid chromium "${X_CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/profile" \
		--window-size=1280,800 --window-position=0,0 "file://$WORK/page.html" >"$WORK/chromium.log" 2>&1 &
	PGIDS+=($!)
	find_window() { wid=$(DISPLAY=$disp xdotool search --name '^T:' 2>/dev/null | head -1) && [[ -n $wid ]]; }
	wait_for 60 find_window || { not_ok "host: Chromium shows the test page"; return; }
	sleep 2

	port=$(free_port)
	"$BIN" --display "$disp" --listen 127.0.0.1 --port "$port" --settle 100ms 2>"$WORK/mcp.log" &
	PIDS+=($!)
	if wait_for 15 listening "$port"; then ok "mcp-desktop serves on $disp, port $port"; else
		not_ok "mcp-desktop serves on $disp, port $port"; tail -3 "$WORK/mcp.log" | sed 's/^/#   /'; return
	fi
	# 41 distinct characters outside the US keymap: more than the 19 spare
	# keycodes Xvfb has, so bindings are reused while typing.
	text='Hello, World! é€ü ÀÇ 日本語 ~@#$%^&*()_+{}|:"<>? ąęłńśźż ÆØÅ Ωμέγα привет 한국어'
	node "$CLIENT" --url "http://127.0.0.1:$port/mcp" --type "$text"
	title() { DISPLAY=$disp xdotool getwindowname "$wid" | sed 's/^T://; s/ - Chromium$//'; }
	typed() { [[ $(title) == "$text" ]]; }
	if wait_for 10 typed; then
		ok "type arrives exactly: non-ASCII, CJK, shifted characters, spare keycodes reused"
	else
		not_ok "type arrives exactly"
		echo "#   got  '$(title)'"
		echo "#   want '$text'"
	fi

	# Another process (as cloche-vnc would) binds every spare keycode and
	# holds them: mcp-desktop must take one over rather than drop characters.
	# The other process is desk-try, the same input module without MCP.
	local holder
	if [[ -x $BUILD/tests/tools/desk-try ]]; then
		# Started now, its pool is the keycodes mcp-desktop bound above.
		{ printf '{"action":"type","text":"%s"}\n' 'ÀÁÂÃÄÅ'; sleep 8; } |
			"$BUILD/tests/tools/desk-try" --display "$disp" >"$WORK/holder.out" 2>&1 &
		holder=$!
		wait_for 10 grep -qs typed "$WORK/holder.out"
		text='ø€ß'
		node "$CLIENT" --url "http://127.0.0.1:$port/mcp" --type "$text" >/dev/null
		if wait_for 10 typed; then
			ok "type takes over spare keycodes another process holds"
		else
			not_ok "type takes over spare keycodes another process holds (got '$(title)')"
		fi
		wait "$holder"
	fi

	# Clipboard: what clipboard_set set, xclip reads on the display; what
	# xclip set, clipboard_get returns; ctrl+v pastes clipboard_set's text
	# into the page exactly.
	local clip got url=http://127.0.0.1:$port/mcp
	clip="clip $$ héllo € 日本語 ✓"
	node "$CALL" --url "$url" --tool clipboard_set --args "$(jq -nc --arg t "$clip" '{text: $t}')" >/dev/null
	got=$(DISPLAY=$disp timeout 5 xclip -o -selection clipboard 2>&1)
	check "xclip -o -selection clipboard reads what clipboard_set set (got '$got')" test "$got" = "$clip"
	clip="from xclip $$ ünïcödé Ωμέγα"
	printf '%s' "$clip" | DISPLAY=$disp xclip -selection clipboard 2>/dev/null
	got=$(node "$CALL" --url "$url" --tool clipboard_get)
	check "clipboard_get returns what xclip set (got '$got')" test "$got" = "$clip"
	head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' a | DISPLAY=$disp xclip -selection clipboard 2>/dev/null
	got=$(node "$CALL" --url "$url" --tool clipboard_get)
	check "clipboard_get refuses a text over 1 MiB with an error ($?: ${got:0:90})" \
		grep -q 'limit of 1048576 bytes' <<<"$got"
	text="pasted $$: ąęł 日本語 Ωμέγα ✓"
	node "$CLIENT" --url "$url" --paste "$text" | grep -v '^ok'
	if wait_for 10 typed; then
		ok "clipboard_set then ctrl+v pastes the text into Chromium exactly"
	else
		not_ok "clipboard_set then ctrl+v pastes the text into Chromium exactly (got '$(title)')"
	fi

	# Presets: screenshots of the preset's size, coordinates in it; auto
	# keeps 1280x800 (WXGA has the display's aspect but is not smaller).
	# --no-clipboard, or the sandbox's CLOCHE_CLIPBOARD=off (shared with
	# cloche-vnc): the clipboard tools answer an error saying so.
	local spec p3 pid3 name pw ph off pre post
	for spec in "xga 1024 768 --no-clipboard" "WXGA 1280 800 --no-clipboard" \
		"auto 1280 800 --no-clipboard" "640x400 640 400 CLOCHE_CLIPBOARD=off"; do
		read -r name pw ph off <<<"$spec"
		p3=$(free_port)
		if [[ $off == --* ]]; then pre=(); post=("$off"); else pre=(env "$off"); post=(); fi
		"${pre[@]}" "$BIN" --display "$disp" --listen 127.0.0.1 --port "$p3" --screen-size "$name" \
			"${post[@]}" --no-pointer 2>"$WORK/mcp-$name.log" &
		pid3=$!
		if wait_for 15 listening "$p3"; then
			node "$CLIENT" --url "http://127.0.0.1:$p3/mcp" --sizes --width "$pw" --height "$ph" \
				--real-width 1280 --real-height 800 --pointer off |
				tap_prefix "--screen-size $name: "
			got=$(node "$CALL" --url "http://127.0.0.1:$p3/mcp" --tool clipboard_get)
			check "$off: clipboard_get is a tool error ($?: $got)" grep -q "disabled.*$off" <<<"$got"
		else
			not_ok "mcp-desktop --screen-size $name serves"
		fi
		kill -TERM "$pid3"
		wait "$pid3"
		check "--screen-size $name: exits 0 on SIGTERM" test $? = 0
	done

	# Scaled: screenshots 1024x640, coordinates mapped back to 1280x800.
	# The client suite needs the start page, so show it in a new window.
	DISPLAY=$disp setsid chromium "${X_CHROMIUM_FLAGS[@]}" --user-data-dir="$WORK/profile2" \
		--window-size=1280,800 --window-position=0,0 --start-maximized \
		"file://$PWD/appliance/rootfs-overlay/opt/cloche/share/start.html" >"$WORK/chromium2.log" 2>&1 &
	PGIDS+=($!)
	find_start() { DISPLAY=$disp xdotool search --name '^cloche desktop' >/dev/null 2>&1; }
	wait_for 60 find_start || { not_ok "host: Chromium shows the start page"; return; }
	sleep 2
	port2=$(free_port)
	"$BIN" --display "$disp" --listen 127.0.0.1 --port "$port2" --screen-size 1024x640 \
		--log-level debug 2>"$WORK/mcp2.log" &
	PIDS+=($!)
	wait_for 15 listening "$port2" || { not_ok "mcp-desktop --screen-size 1024x640 serves"; return; }
	node "$CLIENT" --url "http://127.0.0.1:$port2/mcp" --width 1024 --height 640 \
		--real-width 1280 --real-height 800 | tap_prefix 'scaled 1024x640: '

	# SIGTERM: both servers stop cleanly (under ASan: without leaks).
	local pid status i
	for i in 1 2; do
		pid=${PIDS[${#PIDS[@]} - i]}
		kill -TERM "$pid"
		if wait_for 5 exited "$pid"; then
			wait "$pid"
			status=$?
			check "SIGTERM: server $i exits 0 (status $status)" test "$status" = 0
		else
			not_ok "SIGTERM: server $i exits within 5 s"
		fi
	done
}

# --------------------------------------------------------------- sandbox
# The desktop's size under gVisor: Xvfb starts at the largest size and
# cloche-xprobe gives it the default at boot; a cloche-vnc with resizing on
# (a second one, run inside with CLOCHE_VNC_RESIZE=on, since the node does
# not set the switch yet) resizes it for a viewer from the router netns;
# the sandbox's own cloche-vnc follows without a restart, mcp-desktop
# reports the new size, and the default comes back when the viewer leaves.
screenshot_says() { # screenshot_says WxH: mcp-desktop's screenshot states that size
	sb_in_router "$id" node "$CALL" --url "http://10.0.2.15:8100/mcp" --tool screenshot |
		grep -q "^screenshot $1: the whole display"
}
sandbox_resize() {
	local vc=$BUILD/tests/tools/vnc-client h0 h1 exec_pid client_pid line
	check "sandbox: the desktop boots at its default 1280x800 (Xvfb started at 2560x1600)" \
		screenshot_says 1280x800
	echo "# sandbox: xvfb ready after $(jq -r '.services.xvfb.ready_ms' <<<"$health") ms (probe: cloche-xprobe --set-size)"
	h0=$(sb_health "$id")
	sb_exec "$id" /usr/bin/timeout 40 /usr/bin/env -u CLOCHE_VNC_SECRET CLOCHE_VNC_RESIZE=on \
		/opt/cloche/bin/cloche-vnc --display :0 --rfb-port 5901 --http-port 0 --size 1280x800 \
		>"$WORK/vnc-resize.log" 2>&1 &
	exec_pid=$!
	PIDS+=("$exec_pid")
	if ! wait_for 20 sb_in_router "$id" bash -c 'exec 3<>/dev/tcp/10.0.2.15/5901' 2>/dev/null; then
		not_ok "sandbox: a cloche-vnc with CLOCHE_VNC_RESIZE=on starts inside"
		return
	fi
	sb_in_router "$id" "$vc" --host 10.0.2.15 --port 5901 --timeout 30 --resize 1920x1080 \
		--resize 1366x768 --resize 1600x1000 --sleep 6000 >"$WORK/resize.json" 2>&1 &
	client_pid=$!
	PIDS+=("$client_pid")
	wait_for 30 grep -q '"resize":"1600x1000"' "$WORK/resize.json"
	while IFS= read -r line; do
		echo "# sandbox: $line"
	done <"$WORK/resize.json"
	check "sandbox: a viewer's SetDesktopSize gives it frames of 1920x1080, 1366x768, 1600x1000" \
		test "$(grep -c '"ok":true' "$WORK/resize.json")" = 3
	check "sandbox: mcp-desktop's screenshot says 1600x1000" screenshot_says 1600x1000
	sb_vnc_secret "$id" >"$WORK/secret"
	check "sandbox: the sandbox's own cloche-vnc (resize off) follows to 1600x1000" \
		bash -c 'sb() { nsenter --net="/var/run/netns/R-$1" "${@:2}"; }
			sb "$1" "$2" --host 10.0.2.15 --port 5900 --password-file "$3" --stats --timeout 20 |
			grep -q "\"width\":1600,\"height\":1000"' _ "$id" "$vc" "$WORK/secret"
	wait "$client_pid"
	check "sandbox: when the viewer leaves, the default 1280x800 comes back" \
		wait_for 20 screenshot_says 1280x800
	h1=$(sb_health "$id")
	check "sandbox: its cloche-vnc did not restart (pid $(jq -r .services.vnc.pid <<<"$h1"), restarts $(jq -r .services.vnc.restarts <<<"$h1"))" \
		test "$(jq -c '[.services.vnc.pid, .services.vnc.restarts]' <<<"$h0")" = \
		"$(jq -c '[.services.vnc.pid, .services.vnc.restarts]' <<<"$h1")"
	wait "$exec_pid"
	grep '"desktop size requested"' "$WORK/vnc-resize.log" |
		sed -n 's/.*"width":\([0-9]*\),"height":\([0-9]*\).*"status":"\([^"]*\)".*"ms":\([0-9]*\).*/# sandbox: request \1x\2 \3, server side \4 ms/p'
}

sandbox_part() {
	local health pid t0
	[[ -n $template ]] || { not_ok "a desktop template exists (run make template)"; return; }
	t0=$(now_ms)
	if ! sb_up "$id" "$template"; then
		not_ok "runsc starts a sandbox on $(basename "$template")"
		return
	fi
	ok "runsc starts a sandbox on $(basename "$template")"
	if ! sb_wait_ready "$id" 180; then
		not_ok "health turns ready"
		return
	fi
	ok "health turns ready ($(($(now_ms) - t0)) ms)"
	health=$(sb_health "$id")
	check "health reports mcp-desktop ready" test "$(jq -r '.services["mcp-desktop"].state' <<<"$health")" = ready
	sb_in_router "$id" node "$CLIENT" --url "http://10.0.2.15:8100/mcp"
	[[ $? == 0 ]] || echo "# the client suite reported failures"

	# The clipboard both ways with the template's xclip, on display :0.
	local clip got
	clip="sandbox clip $$ é€ 日本"
	sb_in_router "$id" node "$CALL" --url "http://10.0.2.15:8100/mcp" --tool clipboard_set \
		--args "$(jq -nc --arg t "$clip" '{text: $t}')" >/dev/null
	got=$(sb_exec "$id" /usr/bin/env DISPLAY=:0 /usr/bin/timeout 5 /usr/bin/xclip -o -selection clipboard 2>&1)
	check "sandbox: xclip -o reads what clipboard_set set (got '$got')" test "$got" = "$clip"
	sb_exec "$id" /bin/sh -c "printf '%s' 'from xclip inside ø' | DISPLAY=:0 xclip -selection clipboard" >/dev/null 2>&1
	got=$(sb_in_router "$id" node "$CALL" --url "http://10.0.2.15:8100/mcp" --tool clipboard_get)
	check "sandbox: clipboard_get returns what xclip set (got '$got')" test "$got" = 'from xclip inside ø'

	sandbox_resize

	# Killed, it is restarted by cloche-init and serves again.
	pid=$(jq -r '.services["mcp-desktop"].pid' <<<"$health")
	if sb_exec "$id" /bin/kill -KILL "$pid" >/dev/null 2>&1; then
		sleep 0.5
		if sb_wait_ready "$id" 60 && sb_in_router "$id" node "$CLIENT" --url "http://10.0.2.15:8100/mcp" --bench 3 >/dev/null; then
			ok "mcp-desktop comes back after kill -9 and serves screenshots"
		else
			not_ok "mcp-desktop comes back after kill -9 and serves screenshots"
		fi
	else
		not_ok "kill mcp-desktop (pid $pid) inside the sandbox"
	fi
}

host_part
if [[ $BUILD == build ]]; then
	sandbox_part
else
	echo "# $BUILD: host part only (sandboxes run the template's binaries)"
fi
tap_exit
