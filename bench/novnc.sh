#!/usr/bin/env bash
# Benchmark: what a person watching a desktop through noVNC gets.  On the
# host (no sandbox): a private Xvfb at 1280x800, cloche-vnc with a secret as
# in a sandbox, Chromium on that display showing a long article
# (bench/novnc/page.html), and noVNC as cloche-vnc's web port serves it,
# opened from the one-link redirect in headless Chromium (the viewer,
# bench/novnc/run.mjs).  Over fixed windows, while the article scrolls by
# NOVNC_BENCH_PX pixels every animation frame and while the screen is idle:
# frames the viewer drew per second, bytes per second on the WebSocket, and
# CPU of cloche-vnc, Xvfb, the desktop's Chromium and the viewer's Chromium.
# Prints a table and writes bench/results/novnc.json.  About 2 minutes,
# 30 s quick (docs/benchmarks.md).
#
#   NOVNC_BENCH_SCROLL_S  seconds measured while scrolling (20; 6 quick)
#   NOVNC_BENCH_IDLE_S    seconds measured while idle (20; 6 quick)
#   NOVNC_BENCH_ROUNDS    scroll + idle rounds, medians reported (2; 1 quick)
#   NOVNC_BENCH_PX        pixels scrolled per animation frame (4)
#   NOVNC_BENCH_QUALITY   noVNC's JPEG quality, 0-9 (its default: 6), passed
#                         in the link as a person could
#   NOVNC_BENCH_VNC       another cloche-vnc binary (default: build/bin/cloche-vnc,
#                         built first)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
. tests/lib/x11.sh

quick=${CLOCHE_BENCH_QUICK:-0}
scroll_s=${NOVNC_BENCH_SCROLL_S:-$([[ $quick == 1 ]] && echo 6 || echo 20)}
idle_s=${NOVNC_BENCH_IDLE_S:-$([[ $quick == 1 ]] && echo 6 || echo 20)}
rounds=${NOVNC_BENCH_ROUNDS:-$([[ $quick == 1 ]] && echo 1 || echo 2)}
px=${NOVNC_BENCH_PX:-4}
quality=${NOVNC_BENCH_QUALITY:-}
[[ -z $quality || $quality =~ ^[0-9]$ ]] || { echo "novnc: NOVNC_BENCH_QUALITY is 0-9, not $quality" >&2; exit 2; }
out=bench/results/novnc.json
load_start=$(cut -d ' ' -f 1-3 /proc/loadavg)
t0=$(date +%s)

# --- what the bench needs ------------------------------------------------------
missing=()
for tool in Xvfb xdpyinfo xdotool chromium node jq ss getconf; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) || { echo "novnc: missing ${missing[*]} (scripts/install-deps.sh installs them)" >&2; exit 1; }
[[ -f /usr/share/novnc/vnc.html ]] || { echo "novnc: no noVNC in /usr/share/novnc (apt-get install novnc)" >&2; exit 1; }
vnc=${NOVNC_BENCH_VNC:-build/bin/cloche-vnc}
[[ -n ${NOVNC_BENCH_VNC:-} ]] || make -s -j2 build/bin/cloche-vnc
[[ -x $vnc ]] || { echo "novnc: $vnc is not an executable" >&2; exit 1; }

# --- the desktop ---------------------------------------------------------------
tmp=$(mktemp -d /tmp/cloche-bench-novnc.XXXXXX)
pids=()  # stopped newest first
sids=()  # sessions (Chromium and its helpers), stopped as a whole
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local i p
	for p in "${sids[@]}"; do pkill -TERM -s "$p" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
	for ((i = 0; i < 50; i++)); do
		local alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		for p in "${sids[@]}"; do pgrep -s "$p" >/dev/null && alive=1; done
		((alive)) || break
		sleep 0.1
	done
	for p in "${sids[@]}"; do pkill -KILL -s "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

disp=$(x_free_display 140 199) || { echo "novnc: no free X display in :140-:199" >&2; exit 1; }
Xvfb "$disp" -screen 0 1280x800x24 -nolisten tcp -noreset >"$tmp/xvfb.log" 2>&1 &
xvfb_pid=$!
pids+=("$xvfb_pid")
bench_wait 15 "Xvfb on $disp" xdpyinfo -display "$disp" || { tail -n 5 "$tmp/xvfb.log" >&2; exit 1; }
export DISPLAY=$disp

# A secret as every sandbox has: the viewer comes in through /?secret=,
# which is how the proxy's one-click link reaches cloche-vnc.
secret=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
http=$(free_port)
CLOCHE_VNC_SECRET=$secret "$vnc" --display "$disp" --listen 127.0.0.1 --rfb-port 0 --http-port "$http" \
	--log-level info 2>"$tmp/vnc.log" &
vnc_pid=$!
pids+=("$vnc_pid")
bench_wait 15 "cloche-vnc listening on $http" grep -q '"msg":"cloche-vnc started"' "$tmp/vnc.log" ||
	{ tail -n 5 "$tmp/vnc.log" >&2; exit 1; }

cp bench/novnc/page.html "$tmp/page.html"
setsid chromium "${X_CHROMIUM_FLAGS[@]}" --no-default-browser-check \
	--user-data-dir="$tmp/desktop-profile" --window-size=1280,800 \
	--window-position=0,0 "file://$tmp/page.html#px=$px" >"$tmp/chromium.log" 2>&1 &
desktop_sid=$!
sids+=("$desktop_sid")
wid=
find_window() { wid=$(xdotool search --name '^novnc-bench idle' | head -n 1) && [[ -n $wid ]]; }
bench_wait 60 "Chromium showing the page" find_window || { grep -v dbus "$tmp/chromium.log" | tail -n 5 >&2; exit 1; }
# Keys go where the pointer is (no window manager): click the page once,
# then rest the pointer in the page's plain margin, where its shape does not
# change as the article scrolls under it.
sleep 2
xdotool mousemove 640 500 click 1 mousemove 100 500

# --- the viewer and the windows ---------------------------------------------------
phases=()
for ((r = 0; r < rounds; r++)); do phases+=("scroll:$scroll_s" "idle:$idle_s"); done
rc=0
# In the background and waited for: a TERM runs the cleanup at once.
node bench/novnc/run.mjs --url "http://127.0.0.1:$http/?secret=$secret${quality:+&quality=$quality}" --http-port "$http" \
	--display "$disp" --wid "$wid" --vnc-pid "$vnc_pid" --xvfb-pid "$xvfb_pid" --desktop-sid "$desktop_sid" \
	--phases "$(IFS=,; echo "${phases[*]}")" --profile "$tmp/viewer-profile" --out "$tmp/raw.json" &
pids+=($!)
wait "$!" || rc=$?
if ((rc)) || [[ ! -s $tmp/raw.json ]]; then
	echo "novnc: the viewer wrote no figures; cloche-vnc's log:" >&2
	tail -n 10 "$tmp/vnc.log" >&2
	exit 1
fi

# Headlines: per kind of window, the median over the rounds.
jq --arg at "$(date -u +%FT%TZ)" --argjson quick "$([[ $quick == 1 ]] && echo true || echo false)" \
	--arg load_start "$load_start" --arg load_end "$(cut -d ' ' -f 1-3 /proc/loadavg)" \
	--argjson seconds "$(($(date +%s) - t0))" --argjson px "$px" --argjson rounds "$rounds" \
	--argjson quality "${quality:-6}" \
	--arg commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--arg chromium "$(dpkg-query -W -f='${Version}' chromium 2>/dev/null || echo unknown)" \
	--arg novnc "$(dpkg-query -W -f='${Version}' novnc 2>/dev/null || echo unknown)" '
	def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 * 1000 | round / 1000 end;
	def med(kind; f): [.phases[] | select(.name == kind) | f] | median;
	{bench: "novnc", measured_at: $at, quick: $quick, bench_seconds: $seconds,
	 load_average: {start: $load_start, end: $load_end},
	 display: "1280x800", scroll_px_per_frame: $px, rounds: $rounds, novnc_quality: $quality,
	 versions: {cloche_commit: $commit, chromium: $chromium, novnc: $novnc},
	 scroll_fps: med("scroll"; .fps), scroll_mbit_s: med("scroll"; .mbit_s),
	 scroll_desktop_fps: med("scroll"; .desktop_fps),
	 scroll_cpu_pct: {cloche_vnc: med("scroll"; .cpu_pct.cloche_vnc), xvfb: med("scroll"; .cpu_pct.xvfb),
	   desktop_chromium: med("scroll"; .cpu_pct.desktop_chromium), viewer_chromium: med("scroll"; .cpu_pct.viewer_chromium)},
	 idle_fps: med("idle"; .fps), idle_kbit_s: med("idle"; .kbit_s),
	 idle_cpu_pct: {cloche_vnc: med("idle"; .cpu_pct.cloche_vnc), xvfb: med("idle"; .cpu_pct.xvfb),
	   desktop_chromium: med("idle"; .cpu_pct.desktop_chromium), viewer_chromium: med("idle"; .cpu_pct.viewer_chromium)}
	} + .' "$tmp/raw.json" >"$out"

printf '%-7s %6s %8s %10s %10s %7s %6s %9s %8s %7s %5s\n' window s fps updates/s Mbit/s gap_p95 \
	vnc% Xvfb% desktop% viewer% load
jq -r '.phases[] | [.name, .seconds, .fps, .updates_per_s, .mbit_s, .gap_ms.p95, .cpu_pct.cloche_vnc,
	.cpu_pct.xvfb, .cpu_pct.desktop_chromium, .cpu_pct.viewer_chromium, .load_average] | map(. // "-") | @tsv' "$out" |
	while IFS=$'\t' read -r n s f u m g v x d w l; do
		printf '%-7s %6s %8s %10s %10s %7s %6s %9s %8s %7s %5s\n' "$n" "$s" "$f" "$u" "$m" "$g" "$v" "$x" "$d" "$w" "$l"
	done
jq -r '"desktop Chromium drew \(.scroll_desktop_fps) fps while scrolling; CPU in % of one core; " +
	"WebSocket bytes are noVNC payload; load average at start \(.load_average.start)"' "$out"
echo "written: $out ($(($(date +%s) - t0)) s)"
