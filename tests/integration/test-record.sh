#!/usr/bin/env bash
# Recordings of a sandbox's screen and the action trace (docs/recording.md),
# on a whole installation on loopback (tests/lib/stack.sh): acquire a
# desktop, start a recording through the portal, scroll a long page for
# RECORD_TEST_SECONDS (30) with mcp-desktop's `computer` tool, stop,
# download the MP4 through the portal and read it with ffprobe (H.264, the
# duration, the frame count), read the trace (the calls made, with the
# recording's id and offsets, no image data), bad ids and states get JSON
# errors, the recorder refuses anyone without the node's secret, an acquire
# with `desktop.record` records from the start, a resize by the agent and
# its XKillClient of the grab each keep what was recorded and go on in a
# new segment, a hibernate ends a recording whole, and a release leaves
# nothing.
#   RECORD_TEST_QUICK=1   6 s of scrolling and no hibernate
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/stack.sh

SECS=${RECORD_TEST_SECONDS:-30}
QUICK=${RECORD_TEST_QUICK:-}
[[ -n $QUICK ]] && SECS=6

stack_init
command -v ffprobe >/dev/null || { echo "Bail out! ffprobe is needed (apt-get install ffmpeg)"; exit 1; }
check "a portal, a node agent and a proxy start" stack_up "${CLOCHE_TEST_PREFIX:-t}-rec-$$"
U1=$(stack_key rec-1)
U2=$(stack_key rec-2)
work=$STACK_WORK

# pcall KEY METHOD PATH [BODY]: "status body" (body saved whole in $work/last)
pcall() {
	local out
	out=$(curl -s -m 300 -o "$work/last" -w '%{http_code}' -X "$2" ${1:+-H "Authorization: Bearer $1"} \
		${4:+-H 'Content-Type: application/json' --data-binary "$4"} "$PORTAL$3") || out=000
	printf '%s %s\n' "$out" "$(head -c 4000 "$work/last")"
}
st() { cut -d' ' -f1 <<<"$1"; }
js() { cut -d' ' -f2- <<<"$1" | jq -r "$2" 2>/dev/null; }
export -f pcall st js
export PORTAL work

mcp() { mcp_call "$@"; }
export -f mcp mcp_call

r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":900,"desktop":{"clipboard":"yes"}}')
check "desktop.clipboard that is not a boolean: 400" test "$(st "$r")" = 400
r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":900,"desktop":{"zoom":true}}')
check "an unknown desktop switch: 400 naming it" \
	bash -c '[[ $(st "$1") == 400 && $(js "$1" .error.message) == *zoom* ]]' _ "$r"

r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":900}')
check "acquire a desktop" test "$(st "$r")" = 201
SB=$(js "$r" .id)
SID=$(js "$(pcall "$U1" GET "/sbv1/sandboxes/$SB")" .node_sandbox_id)
echo "# sandbox $SB (node's $SID)"

r=$(pcall "$U2" POST "/sbv1/sandboxes/$SB/recordings")
check "another user's key cannot record it: 404" test "$(st "$r")" = 404
r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings/rec-nope")
check "an unknown recording: 404 JSON" \
	bash -c '[[ $(st "$1") == 404 && -n $(js "$1" .error.message) ]]' _ "$r"
r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings/..%2f..%2fetc")
check "a recording id that is no id: 404" test "$(st "$r")" = 404
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings/rec-abc/stop")
check "stopping when nothing records: 404 JSON" \
	bash -c '[[ $(st "$1") == 404 && -n $(js "$1" .error.message) ]]' _ "$r"
check "the recorder inside refuses a request without the node's secret: 403" \
	bash -c '[[ $(nsenter --net=/var/run/netns/R-$1 curl -s -o /dev/null -w "%{http_code}" \
		-X POST -d "{\"id\":\"rec-x\"}" http://10.0.2.15:8070/start) == 403 ]]' _ "$SID"

rec_pid=$(jq -r '.services.rec.pid' <<<"$(sb_health "$SID")")
shown=$(sb_runsc "$SID" exec --user 1000:1000 "$SID" cat /proc/1/environ "/proc/$rec_pid/environ" 2>/dev/null |
	tr '\0' '\n' | grep -c "^CLOCHE_REC_SECRET=.")
check "the recorder's secret is readable neither in init's nor in cloche-rec's environment ($shown shown)" \
	test "$shown" = 0

# A long page to scroll, made through mcp-shell and opened by mcp-browser.
mcp "$SID" 8889 run_command '{"command":"seq 1 3000 | sed \"s|.*|<p style=\\\"font:20px sans-serif\\\">line & of a long page to scroll</p>|\" > /tmp/long.html && echo made"}' >/dev/null
check "mcp-browser opens a long page" \
	bash -c 'mcp "$1" 7999 browser_navigate "{\"url\":\"file:///tmp/long.html\"}" >/dev/null' _ "$SID"

t0=$(date +%s%N)
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings")
t1=$(date +%s%N)
check "start a recording: 201" test "$(st "$r")" = 201
REC=$(js "$r" .recording.id)
echo "# recording $REC started in $(((t1 - t0) / 1000000)) ms"
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings")
check "a second start while one records: 409" test "$(st "$r")" = 409
r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings/$REC")
check "downloading a running recording: 409" test "$(st "$r")" = 409

calls=0
end=$(($(date +%s) + SECS))
while (($(date +%s) < end)); do
	mcp "$SID" 8100 computer '{"action":"scroll","coordinate":[640,400],"scroll_direction":"down","scroll_amount":5}' >/dev/null &&
		calls=$((calls + 1))
done
mcp "$SID" 8100 computer '{"action":"screenshot"}' >/dev/null && calls=$((calls + 1))
echo "# $calls mcp-desktop calls in $SECS s"

t0=$(date +%s%N)
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings/$REC/stop")
t1=$(date +%s%N)
check "stop it: 200, done" bash -c '[[ $(st "$1") == 200 && $(js "$1" .state) == done ]]' _ "$r"
echo "# stopped in $(((t1 - t0) / 1000000)) ms: $(js "$r" '"\(.bytes) bytes, \(.duration_ms) ms"')"

r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings")
check "the list has it, done" \
	bash -c '[[ $(js "$1" "[.recordings[] | select(.id == \"$2\" and .state == \"done\")] | length") == 1 ]]' _ "$r" "$REC"

code=$(curl -s -D "$work/head" -o "$work/rec.mp4" -w '%{http_code}' -H "Authorization: Bearer $U1" \
	"$PORTAL/sbv1/sandboxes/$SB/recordings/$REC")
check "download the MP4 through the portal: 200 video/mp4" \
	bash -c '[[ $1 == 200 ]] && grep -qi "^content-type: video/mp4" "$2"' _ "$code" "$work/head"
check "... with its Content-Length" \
	bash -c '[[ $(grep -i "^content-length:" "$1" | tr -dc 0-9) == $(stat -c %s "$2") ]]' _ "$work/head" "$work/rec.mp4"
probe=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries \
	stream=codec_name,width,height,nb_read_frames -show_entries format=duration -of json "$work/rec.mp4")
echo "# ffprobe: $(jq -c . <<<"$probe"), $(stat -c %s "$work/rec.mp4") bytes"
check "ffprobe: H.264" test "$(jq -r '.streams[0].codec_name' <<<"$probe")" = h264
check "ffprobe: 1280x800" test "$(jq -r '"\(.streams[0].width)x\(.streams[0].height)"' <<<"$probe")" = 1280x800
check "ffprobe: the duration is the recording's, within 3 s" \
	bash -c 'd=$(jq -r .format.duration <<<"$1"); awk -v d="$d" -v s="$2" "BEGIN { exit !(d >= s - 3 && d <= s + 6) }"' _ "$probe" "$SECS"
check "ffprobe: frames were kept while the page scrolled (more than the idle one a second)" \
	bash -c '(($(jq -r ".streams[0].nb_read_frames" <<<"$1") * 10 > 13 * $2))' _ "$probe" "$SECS"

curl -s -o "$work/trace.jsonl" -H "Authorization: Bearer $U1" "$PORTAL/sbv1/sandboxes/$SB/trace"
cp "$work/trace.jsonl" "${RECORD_TEST_KEEP:-/dev/null}" 2>/dev/null
check "the trace is JSON lines" jq -e . "$work/trace.jsonl" >/dev/null
during=$(jq -c --arg r "$REC" 'select(.recording.id == $r)' "$work/trace.jsonl")
check "the trace lists the scroll calls made during the recording" \
	bash -c '(($(jq -s "[.[] | select(.server == \"cloche-desktop\" or .tool == \"computer\") | select(.arguments.action == \"scroll\")] | length" <<<"$1") >= $2 - 1))' _ "$during" "$((calls - 1))"
check "... each with a time, a duration, a status and an offset into the recording" \
	bash -c 'jq -e "select(.ts == null or .duration_ms == null or .status == null or .recording.offset_ms == null)" <<<"$1" | grep -q . && exit 1 || exit 0' _ "$during"
check "... the screenshot with its image hash and no image data" \
	bash -c 'jq -e "select(.arguments.action == \"screenshot\") | .images[0].sha256_16" <<<"$1" >/dev/null && ! grep -q "iVBOR" <<<"$1"' _ "$during"
check "... and the calls before it (the page, the browser) without a recording" \
	test "$(jq -s '[.[] | select(.tool == "browser_navigate" and .recording == null)] | length' "$work/trace.jsonl")" = 1
check "the sandbox's events show the start and the stop" \
	bash -c 'e=$(js "$(pcall "$1" GET "/sbv1/sandboxes/$2/events")" "[.events[].reason] | join(\",\")"); [[ $e == *"recording started $3"* && $e == *"recording stopped $3"* ]]' _ "$U1" "$SB" "$REC"

CLI=${BUILD:-build}/bin/cloche
check "cloche recordings lists it" \
	bash -c '"$1" --url "$PORTAL" --api-key "$2" recordings "$3" | grep -Eq "^$4 +done "' _ "$CLI" "$U1" "$SB" "$REC"
check "cloche download saves the same MP4" \
	bash -c '"$1" --url "$PORTAL" --api-key "$2" download "$3" "$4" -o "$5/cli.mp4" 2>/dev/null && cmp -s "$5/cli.mp4" "$5/rec.mp4"' \
	_ "$CLI" "$U1" "$SB" "$REC" "$work"
check "cloche trace prints the trace" \
	bash -c '(($("$1" --url "$PORTAL" --api-key "$2" trace "$3" | wc -l) >= $(wc -l <"$4")))' _ "$CLI" "$U1" "$SB" "$work/trace.jsonl"
# The trace is the agent's own account, and the agent can write anything
# into it: on a terminal the CLI shows control characters instead of
# sending them (a pty from script(1)); a pipe still gets the exact bytes.
cat >"$work/forge.json" <<'EOF'
{"command":"printf '\\033]0;pwned\\007\\033[2Jforged\\n' >> /var/lib/cloche/trace/trace.jsonl"}
EOF
mcp "$SID" 8889 run_command "$(cat "$work/forge.json")" >/dev/null
script -qec "$CLI --url $PORTAL --api-key $U1 trace $SB" /dev/null >"$work/trace-tty.txt" 2>&1
esc=$'\x1b'
check "cloche trace on a terminal shows the agent's escape sequences instead of sending them" \
	bash -c 'grep -qF "\x1b]0;pwned\x07\x1b[2Jforged" "$1" && ! grep -qF "$2" "$1"' _ "$work/trace-tty.txt" "$esc"
check "... and into a pipe as they are" \
	bash -c '"$1" --url "$PORTAL" --api-key "$2" trace "$3" | grep -qF "$4]0;pwned"' _ "$CLI" "$U1" "$SB" "$esc"
check "cloche record on an unknown sandbox: exit 3 (not found)" \
	bash -c '"$1" --url "$PORTAL" --api-key "$2" record sb-0000000000000000 2>/dev/null; (($? == 3))' _ "$CLI" "$U1"

# The agent resizes the screen from its own shell while a recording runs:
# x11grab cannot follow, so the segment ends (kept, playable up to its last
# fragment: the MP4 is fragmented) and the recording goes on in a new
# segment at the new size, which the first one's id still stops.  Then the
# agent kills the grab's X connection (XKillClient, which X lets any client
# do): the same again.  It notes the display's clients before the recording
# starts, and kills those that came after (tests/lib/agent-attack.py).
agent_x() {
	mcp "$SID" 8889 run_command "$(jq -nc --arg c "echo $(base64 -w0 tests/lib/agent-attack.py) |
		base64 -d >/tmp/attack.py && python3 /tmp/attack.py $*" '{command: $c}')"
}
agent_x "xclients >/tmp/x.before && echo listed" >"$work/xclients.out"
check "the agent lists the display's clients" grep -q listed "$work/xclients.out"
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings")
REC3=$(js "$r" .recording.id)
check "a recording starts for the resize" test "$(st "$r")" = 201
sleep 5
mcp "$SID" 8889 run_command '{"command":"cloche-xprobe --display :0 --set-size 1024x768 && echo resized"}' >"$work/resize.out"
check "the agent resizes the screen to 1024x768 from its shell" grep -q resized "$work/resize.out"
# next_seg ID: the running segment that continues ID
next_seg() { js "$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings")" \
	"[.recordings[] | select(.continues == \"$1\" and .state == \"recording\") | .id][0] // empty"; }
# went_on ID WHICH: waits up to 20 s for the segment after ID into $seg, and
# checks it and how ID ended
went_on() {
	local i r
	seg=
	for ((i = 0; i < 100; i++)); do seg=$(next_seg "$1") && [[ -n $seg ]] && break; sleep 0.2; done
	r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings")
	check "the recording goes on in a $2 segment that continues it (${seg:-none})" test -n "$seg"
	check "... the one before ended, failed (ffmpeg died), its bytes kept" \
		bash -c '[[ $(js "$1" "[.recordings[] | select(.id == \"$2\") | \"\(.state) \(.reason) \(.bytes > 0)\"][0]") == "failed ffmpeg died true" ]]' _ "$r" "$1"
}
went_on "$REC3" second
NEXT=$seg
code=$(curl -s -o "$work/seg1.mp4" -w '%{http_code}' -H "Authorization: Bearer $U1" "$PORTAL/sbv1/sandboxes/$SB/recordings/$REC3")
probe=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries \
	stream=codec_name,width,height,nb_read_frames -show_entries format=duration -of json "$work/seg1.mp4")
echo "# first segment: HTTP $code, $(jq -c . <<<"$probe")"
check "... the first downloads (200) and plays: H.264 at 1280x800, about 5 s" \
	bash -c '[[ $1 == 200 && $(jq -r ".streams[0] | \"\(.codec_name) \(.width)x\(.height)\"" <<<"$2") == "h264 1280x800" ]] &&
		awk -v d="$(jq -r .format.duration <<<"$2")" "BEGIN { exit !(d >= 2 && d <= 9) }"' _ "$code" "$probe"
sleep 3
agent_x "xkill-new /tmp/x.before" >"$work/xkill.out"
sed 's/^/# agent: /' "$work/xkill.out"
check "the agent kills the recorder's X connection (XKillClient)" grep -q '^xkill client-.* ok' "$work/xkill.out"
went_on "$NEXT" third
NEXT2=$seg
code=$(curl -s -o "$work/seg2.mp4" -w '%{http_code}' -H "Authorization: Bearer $U1" "$PORTAL/sbv1/sandboxes/$SB/recordings/$NEXT")
check "... the second downloads (200) and plays at the new size, 1024x768" \
	bash -c '[[ $1 == 200 && $(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height -of csv=p=0 "$2") == h264,1024,768 ]]' _ "$code" "$work/seg2.mp4"
sleep 2
r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings/$REC3/stop")
check "stopping by the first segment's id stops the running one: 200, done" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" .id) == "$2" && $(js "$1" .state) == done ]]' _ "$r" "$NEXT2"
curl -s -o "$work/seg3.mp4" -H "Authorization: Bearer $U1" "$PORTAL/sbv1/sandboxes/$SB/recordings/$NEXT2"
check "the third segment plays, 1024x768" \
	test "$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height -of csv=p=0 "$work/seg3.mp4")" = "h264,1024,768"
mcp "$SID" 8889 run_command '{"command":"cloche-xprobe --display :0 --set-size 1280x800"}' >/dev/null

if [[ -z $QUICK ]]; then
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings")
	REC2=$(js "$r" .recording.id)
	sleep 3
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/hibernate" '{"wait":120}')
	check "hibernate while recording" test "$(st "$r")" = 200
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/wake" '{"wait":120}')
	check "... and wake" test "$(st "$r")" = 200
	r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings")
	check "the recording was finished by the hibernate" \
		bash -c '[[ $(js "$1" "[.recordings[] | select(.id == \"$2\") | \"\(.state) \(.reason)\"][0]") == "done hibernate" ]]' _ "$r" "$REC2"
	curl -s -o "$work/rec2.mp4" -H "Authorization: Bearer $U1" "$PORTAL/sbv1/sandboxes/$SB/recordings/$REC2"
	check "... and plays" test "$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$work/rec2.mp4")" = h264
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB/recordings")
	check "a recording starts again after the wake" test "$(st "$r")" = 201
fi

r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":900,"desktop":{"record":true,"clipboard":false}}')
check "acquire with desktop.record and the clipboard off" test "$(st "$r")" = 201
SB2=$(js "$r" .id)
SID2=$(js "$(pcall "$U1" GET "/sbv1/sandboxes/$SB2")" .node_sandbox_id)
check "... it records from the start" \
	bash -c 'for ((i = 0; i < 100; i++)); do [[ $(js "$(pcall "$1" GET "/sbv1/sandboxes/$2/recordings")" "[.recordings[] | select(.state == \"recording\")] | length") == 1 ]] && exit 0; sleep 0.2; done; exit 1' _ "$U1" "$SB2"
check "... the guest got CLOCHE_CLIPBOARD=off" \
	grep -qx CLOCHE_CLIPBOARD=off <(jq -r ".process.env[]" "$(sb_dir "$SID2")/bundle/config.json")
if [[ -z $QUICK ]]; then
	# The switches are the sandbox's for good: a hibernate and wake, and a fork.
	pcall "$U1" POST "/sbv1/sandboxes/$SB2/hibernate" '{"wait":120}' >/dev/null
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB2/wake" '{"wait":120}')
	check "... after a hibernate and a wake its guest still has CLOCHE_CLIPBOARD=off" \
		bash -c '[[ $(st "$1") == 200 ]] && grep -qx CLOCHE_CLIPBOARD=off <(jq -r ".process.env[]" "$2/bundle/config.json")' \
		_ "$r" "$(sb_dir "$SID2")"
	r=$(pcall "$U1" POST "/sbv1/sandboxes/$SB2/fork" '{"count":1,"wait":120}')
	KID=$(js "$r" '.children[0].id')
	KSID=$(js "$(pcall "$U1" GET "/sbv1/sandboxes/$KID")" .node_sandbox_id)
	check "... and so does its fork's, which the portal shows with the switches" \
		bash -c '[[ $(st "$1") == 200 && $(js "$1" ".children[0].desktop.clipboard") == false ]] && grep -qx CLOCHE_CLIPBOARD=off <(jq -r ".process.env[]" "$2/bundle/config.json")' \
		_ "$r" "$(sb_dir "$KSID")"
	check "... and the fork has its parent's recordings" \
		bash -c '(($(js "$(pcall "$1" GET "/sbv1/sandboxes/$2/recordings")" ".recordings | length") >= 1))' _ "$U1" "$KID"
	pcall "$U1" POST "/sbv1/sandboxes/$KID/release" >/dev/null
fi
check "... the portal shows them" \
	test "$(js "$(pcall "$U1" GET "/sbv1/sandboxes/$SB2")" '.desktop | "\(.clipboard) \(.resize) \(.record)"')" = "false false true"
check "... and its node keeps them" \
	test "$(body_of "$(api GET "/v1/sandboxes/$SID2")" | jq -c .desktop)" = '{"clipboard":false,"resize":false}'

for s in "$SB" "$SB2"; do pcall "$U1" POST "/sbv1/sandboxes/$s/release" >/dev/null; done
released() { for ((i = 0; i < 300; i++)); do gone "$1" 2>/dev/null && return 0; sleep 0.2; done; gone "$1"; }
check "a release leaves nothing on the node (the sandbox, its recorder, its files)" released "$SID"
check "... nor of the one that recorded from the start" released "$SID2"
r=$(pcall "$U1" GET "/sbv1/sandboxes/$SB/recordings")
check "recordings of a released sandbox: 409 JSON" test "$(st "$r")" = 409
stack_down
tap_exit
