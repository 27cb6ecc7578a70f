#!/usr/bin/env bash
# cloche-rec on the host with a real Xvfb and ffmpeg, recording onto a disk
# that fills up while it records (a 3 MiB tmpfs; the agent paints noise,
# which no encoder can compress): the segment that met the full disk ends
# `failed` and still plays up to its last fragment, the recorder does not
# go on in segments that cannot start, stays up and answers, and leaves no
# ffmpeg behind; once there is room it records again, and SIGTERM ends it.
# (A full disk inside a sandbox is the pool's disk, which the machine's
# other sandboxes share: that is why this runs here.)
# sanitize: yes
# lane: host
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/x11.sh

BUILD=${BUILD:-build}
REC=$BUILD/bin/cloche-rec
for tool in Xvfb ffmpeg ffprobe python3 curl jq; do
	command -v "$tool" >/dev/null || { echo "Bail out! $tool is needed"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "Bail out! this suite mounts a tmpfs: run it as root"; exit 1; }

work=$(mktemp -d /tmp/test-rec-host.XXXXXX)
disk=$work/rec
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$disk" && umount "$disk"
	[[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

mkdir "$disk"
check "a 3 MiB disk for the recordings" mount -t tmpfs -o size=3m,mode=0755 tmpfs "$disk"
DISP=$(x_free_display 200 260) || { echo "Bail out! no free X display"; exit 1; }
Xvfb "$DISP" -screen 0 640x480x24 -nolisten tcp -noreset >"$work/xvfb.log" 2>&1 &
pids+=($!)
port=$(free_port)
SECRET=rec-host-secret-0123456789
CLOCHE_REC_SECRET=$SECRET "$REC" --listen 127.0.0.1 --port "$port" --dir "$disk" --display "$DISP" \
	>"$work/rec.log" 2>&1 &
rec=$!
pids+=("$rec")
check "cloche-rec listens" wait_for 15 listening "$port"

# req METHOD PATH [BODY]: "<status> <body>"
req() {
	curl -s -m 30 -X "$1" -H "X-Cloche-Rec-Secret: $SECRET" ${3:+-d "$3"} \
		-w ' %{http_code}' "http://127.0.0.1:$port$2" | awk '{ s = $NF; $NF = ""; print s, $0 }'
}
FIRST=rec-00000000000000f1
r=$(req POST /start "{\"id\":\"$FIRST\"}")
check "a recording starts (${r%% *})" test "${r%% *}" = 201
sleep 5 # a quiet screen: fragments of a few KiB, every 2 s
DISPLAY=$DISP python3 tests/lib/agent-attack.py noise 30 >"$work/noise.out" &
noise=$!
pids+=("$noise")
# shellcheck disable=SC2317  # called by wait_for
nothing_records() { [[ $(req GET /status | cut -d' ' -f2- | jq -r '.recording.id // "none"') == none ]]; }
check "the disk fills up and the recording ends by itself" wait_for 40 nothing_records
kill "$noise" 2>/dev/null
echo "# disk: $(df -k --output=used,avail "$disk" | tail -1 | xargs) KiB used/available; files: $(ls "$disk" | xargs)"
side=$(cat "$disk/$FIRST.json" 2>/dev/null)
check "its segment ended failed (disk full), with its bytes" \
	test "$(jq -r '"\(.state) \(.reason) \(.bytes > 0)"' <<<"$side")" = "failed disk full true"
check "ffmpeg said why: no space left" grep -q 'No space left on device' "$work/rec.log"
probe=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries \
	stream=codec_name,width,height,nb_read_frames -show_entries format=duration -of json \
	"$disk/$FIRST.mp4" 2>"$work/probe.err")
echo "# the segment: $(jq -c . <<<"$probe")"
check "the fragment ffmpeg could not finish was cut: the file reads without an error" \
	bash -c 'grep -q "unfinished fragment was cut" "$1" && ! grep . "$2"' _ "$work/rec.log" "$work/probe.err"
check "... and what was recorded plays: H.264, 640x480, at least the quiet 4 s" \
	bash -c '[[ $(jq -r ".streams[0] | \"\(.codec_name) \(.width)x\(.height)\"" <<<"$1") == "h264 640x480" ]] &&
		awk -v d="$(jq -r .format.duration <<<"$1")" "BEGIN { exit !(d >= 4) }"' _ "$probe"
n=$(find "$disk" -name 'rec-*.json' | wc -l)
check "no new segment on a full disk (sidecars: $n)" test "$n" = 1
check "cloche-rec is still up and answers (status 200, nothing recording)" \
	bash -c 'kill -0 "$1" && [[ $(cut -d" " -f1 <<<"$2") == 200 ]]' _ "$rec" "$(req GET /status)"
check "no ffmpeg is left" bash -c '! pgrep -P "$1" >/dev/null' _ "$rec"

# The operator makes room: it records again.
find "$disk" -name 'rec-*' ! -name "$FIRST.json" -delete
rm -f "$disk/$FIRST.mp4"
r=$(req POST /start '{"id":"rec-00000000000000f2"}')
check "with room again a recording starts (${r%% *})" test "${r%% *}" = 201
sleep 3
r=$(req POST /stop '{"id":"rec-00000000000000f2"}')
check "... and stops done" test "$(cut -d' ' -f2- <<<"$r" | jq -r '.stopped') ${r%% *}" = "rec-00000000000000f2 200"
check "... and plays" \
	test "$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$disk/rec-00000000000000f2.mp4")" = h264
kill -TERM "$rec"
wait_for 10 exited "$rec"
wait "$rec"
check "SIGTERM: exit 0" test $? = 0
tap_exit
