#!/usr/bin/env bash
# The README's first command as a user meets it: `make run` starts the
# portal, a node agent and the proxy, makes an admin key for the CLI,
# acquires one desktop and prints links through the proxy that work (the
# noVNC link opens the desktop in one click: token -> cookie, the proxy
# supplies the VNC secret; MCP through the SDK client with the token;
# health on any port); a second `make run` starts nothing
# twice; the CLI sees the sandbox; `make stop` leaves no process, netns or
# mount behind and releases the sandbox in the portal's records.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. scripts/lib/aio.sh
. scripts/lib/pool.sh

unset MAKEFLAGS MFLAGS MAKELEVEL
out=$(mktemp)
cleanup() { make -s stop >/dev/null 2>&1; CLOCHE_POOL=$AIO_POOL pool_ensure >/dev/null 2>&1; rm -f "$out"; }
trap cleanup EXIT
export -f aio_api aio_key
export AIO_URL AIO_ENV
make -s stop >/dev/null 2>&1 # a previous run's leftovers

make -s run >"$out" 2>&1
rc=$?
check "make run succeeds" test "$rc" = 0
sed 's/^/# /' "$out" | grep -v 'token=\|Bearer' || true
id=$(cat "$AIO_RUN/sandbox" 2>/dev/null)
novnc=$(grep -o "http://6080-$id\.[^ ]*token=st1\.[^ ]*" "$out" | head -1)
shell=$(grep -o "shell *http://8889-$id\.[^ ]*/mcp" "$out" | grep -o 'http.*')
token=$(grep -o 'Bearer st1\.[^ ]*' "$out" | head -1 | cut -d' ' -f2)
health=${shell/8889-/8080-}
health=${health%/mcp}/health
check "it prints the noVNC and MCP links through the proxy, and the token" \
	test -n "$novnc" -a -n "$shell" -a -n "$token"
jar=$(mktemp)
check "the noVNC link sets an HttpOnly cookie for its host and redirects without the token" \
	bash -c 'h=$(curl -s -D - -o /dev/null -c "$2" "$1"); grep -q "^HTTP/1.1 302" <<<"$h" && grep -qi "^set-cookie: cloche_token=st1\..*HttpOnly" <<<"$h" && ! grep -i "^location:" <<<"$h" | grep -q token' _ "$novnc" "$jar"
check "... then lands in noVNC with the secret the proxy supplied" \
	bash -c 'curl -s -L -b "$2" -o /dev/null -w "%{url_effective}" "${1%%\?*}" | grep -q "vnc.html?secret=.*password="' _ "$novnc" "$jar"
check "the noVNC page loads through the proxy" bash -c 'curl -sf -b "$2" "${1%%\?*}vnc.html" | grep -qi novnc' _ "$novnc" "$jar"
rm -f "$jar"
# The three MCP servers through the proxy with the sandbox token, each
# with its own end-to-end suite (SDK client: SSE progress, sessions, bad
# input; the desktop's first, while the start page's field is empty; the
# browser's after the noVNC check below).
export CLOCHE_MCP_BEARER=$token
(cd tests/e2e && node mcp-desktop-test.mjs --url "${shell/8889-/8100-}") | tap_prefix 'through the proxy: mcp-desktop: '
(cd tests/e2e && node mcp-shell-test.mjs --url "$shell" --user agent --via-proxy 1) | tap_prefix 'through the proxy: mcp-shell: '
unset CLOCHE_MCP_BEARER
# A server of the user's inside the sandbox echoes the request it got: the
# token reaches it nowhere (header, cookie, query), the rest does.
echo_py='import http.server as h
class E(h.BaseHTTPRequestHandler):
    def do_GET(s):
        b = (s.requestline + "\n" + str(s.headers)).encode()
        s.send_response(200); s.send_header("Content-Length", str(len(b))); s.end_headers(); s.wfile.write(b)
h.HTTPServer(("0.0.0.0", 9999), E).serve_forever()'
node tests/e2e/mcp-call.mjs --url "$shell" --token "$token" --tool run_command \
	--args "$(jq -nc --arg p "$echo_py" '{command: ("printf %s " + ($p | @sh) + " >/tmp/echo.py")}')" >/dev/null
node tests/e2e/mcp-call.mjs --url "$shell" --token "$token" --tool start_process \
	--args '{"command": "python3 /tmp/echo.py"}' >/dev/null
for _ in $(seq 50); do
	[[ $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "${shell/8889-/9999-}") == 200 ]] && break
	sleep 0.2
done
echoed=$(curl -s -m 10 -H "Authorization: Bearer $token" -H "Cookie: theme=dark; cloche_token=$token" \
	-H "X-Forwarded-For: 6.6.6.6" "${shell/8889-/9999-}?a=1&token=$token")
sed 's/^/# echoed: /' <<<"$echoed" | head -12
check "a server inside the sandbox gets the request through the proxy" grep -q '^GET /mcp?a=1 HTTP' <<<"$echoed"
check "... without the token: not in Authorization, cookie or query" bash -c '! grep -q "st1\." <<<"$1"' _ "$echoed"
check "... with its other cookies and the proxy's X-Forwarded-* (not the client's)" \
	bash -c 'grep -q "^Cookie: theme=dark" <<<"$1" && grep -q "^X-Forwarded-For: 127.0.0.1" <<<"$1" && ! grep -q 6.6.6.6 <<<"$1"' _ "$echoed"

# The printed link in a real browser: noVNC connects and shows the desktop,
# and typing through it reaches the sandbox (its own ok/not ok lines).
(cd tests/e2e && node novnc-test.mjs --url "$novnc") | tap_prefix 'the make run link: '
# The control lease in gVisor, through the proxy: two noVNC pages and
# mcp-desktop with the token (take control, the agent refused, help
# answered by the hand-back note; docs/vnc.md, Control).
(cd tests/e2e && CLOCHE_MCP_BEARER=$token node novnc-control-test.mjs --url "$novnc" \
	--mcp "${shell/8889-/8100-}" --at 40,640) | tap_prefix 'in the sandbox: control: '
# mcp-browser's suite last: it leaves Chromium on its test pages.
CLOCHE_MCP_BEARER=$token bash -c 'cd tests/e2e && node mcp-browser-test.mjs --url "$1"' _ "${shell/8889-/7999-}" |
	tap_prefix 'through the proxy: mcp-browser: '
check "the health port through the proxy says every service is ready" \
	curl -sf -o /dev/null -H "Authorization: Bearer $token" "$health"
check "without the token the proxy answers 401" \
	bash -c '[[ $(curl -s -o /dev/null -w "%{http_code}" "$1") == 401 ]]' _ "$health"
check "mcp-shell answers through its link (MCP SDK client, bearer token)" \
	bash -c 'node tests/e2e/mcp-call.mjs --url "$1" --token "$2" --tool run_command --args "{\"command\":\"echo made-by-run\"}" | grep -q made-by-run' _ "$shell" "$token"
check "the CLI config holds the portal and an admin key" \
	bash -c 'grep -q "^CLOCHE_URL=http://127.0.0.1:" "$1" && grep -q "^CLOCHE_API_KEY=ck_" "$1"' _ "$AIO_ENV"
check "the portal has the sandbox ready and leased" \
	bash -c '[[ $(aio_api GET "/sbv1/sandboxes/$1" | jq -r .state) == ready ]]' _ "$id"
check "the portal knows the node and its warm pool" \
	bash -c '[[ $(aio_api GET /sbv1/nodes | jq -r ".nodes[0].state") == up ]]'

# The CLI drives a whole lifecycle with the key make run wrote.
C=build/bin/cloche
check "cloche list --json shows the make run sandbox" \
	bash -c '"$1" list --json | jq -e --arg id "$2" "[.sandboxes[].id] | index(\$id)" >/dev/null' _ "$C" "$id"
check "cloche list prints a table" bash -c '"$1" list | grep -q "^ID  *STATE"' _ "$C"
cid=$($C acquire --ttl 120 --label suite=cli --json | jq -r .id)
check "cloche acquire --json: a ready sandbox" bash -c '[[ $("$1" get "$2" --json | jq -r .state) == ready ]]' _ "$C" "$cid"
check "cloche get: the human view" bash -c '"$1" get "$2" | grep -q "^state  *ready"' _ "$C" "$cid"
check "the first sandbox's token is refused for the second (403)" \
	bash -c '[[ $(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $1" "http://8080-$2.$3/health") == 403 ]]' _ "$token" "$cid" "$AIO_DOMAIN"
ctoken=$($C get "$cid" --json | jq -r .token)
check "... and its own token opens it" \
	curl -sf -o /dev/null -H "Authorization: Bearer $ctoken" "http://8080-$cid.$AIO_DOMAIN/health"
e1=$($C get "$cid" --json | jq -r .expires_at)
check "cloche keepalive --ttl moves expires_at" \
	bash -c '"$1" keepalive "$2" --ttl 600 >/dev/null && [[ $("$1" get "$2" --json | jq -r .expires_at) > "$3" ]]' _ "$C" "$cid" "$e1"
check "cloche vnc prints the noVNC URL with the token" bash -c '"$1" vnc "$2" | grep -q "^http.*6080-$2.*token=st1\."' _ "$C" "$cid"
check "cloche mcp-config: three servers with the bearer token" \
	bash -c '"$1" mcp-config "$2" | jq -e "[.mcpServers[] | select(.type == \"http\" and (.headers.Authorization | startswith(\"Bearer st1.\")))] | length == 3" >/dev/null' _ "$C" "$cid"
check "cloche events lists the changes" bash -c '"$1" events "$2" | grep -q "placing"' _ "$C" "$cid"
check "cloche hibernate: the sandbox is hibernated" bash -c '"$1" hibernate "$2" | grep -q "hibernated"' _ "$C" "$cid"
check "cloche wake: ready again" bash -c '"$1" wake "$2" | grep -q "ready"' _ "$C" "$cid"
# A person's noVNC tab across a hibernation: it reconnects and that wakes it.
vnc_link=$("$C" vnc "$cid")
(cd tests/e2e && node novnc-wake-test.mjs --url "$vnc_link" --id "$cid" --cli "../../$C") |
	tap_prefix 'cloche vnc link: '
# Share links to the desktop: a view-only one shows it and drops the
# viewer's input, a control one types; both open the desktop only; a revoked
# or an expired one is refused.
view_link=$("$C" share "$cid" --ttl 600 --label watcher 2>/dev/null)
check "cloche share: a view-only link to the desktop's host with a share token" \
	bash -c '[[ $1 == http://6080-$2.*token=sh1.$2.* ]]' _ "$view_link" "$cid"
(cd tests/e2e && node novnc-test.mjs --url "$view_link" --input none) |
	tap_prefix 'view-only share link: '
ctl_link=$("$C" share "$cid" --mode control --ttl 600 2>/dev/null)
(cd tests/e2e && node novnc-test.mjs --url "$ctl_link") | tap_prefix 'control share link: '
vtok=${view_link##*token=}
check "a share link opens the desktop only: mcp-shell with its token is refused (403 share_port)" \
	bash -c '[[ $(curl -s -H "Authorization: Bearer $1" "http://8889-$2.$3/mcp" | jq -r .error.code) == share_port ]]' _ "$vtok" "$cid" "$AIO_DOMAIN"
check "cloche shares lists both, active" \
	bash -c '[[ $("$1" shares "$2" --json | jq "[.shares[] | select(.state == \"active\")] | length") == 2 ]]' _ "$C" "$cid"
vsid=$("$C" shares "$cid" --json | jq -r '.shares[] | select(.label == "watcher") | .id')
# a viewer still connected when the link is revoked: its WebSocket is cut
ws_done=$(mktemp)
# (curl ends at the 101; this client holds the socket until the proxy ends it;
# libvncserver wants an Origin in the handshake)
python3 - "6080-$cid.$AIO_DOMAIN" "$AIO_PROXY_PORT" "$vtok" "$ws_done" <<'PY' &
import socket, sys, time
host, port, tok, done = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection((host, port), timeout=40)
s.sendall((f"GET /websockify HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           f"Authorization: Bearer {tok}\r\n\r\n").encode())
head = s.recv(4096)
ok = head.startswith(b"HTTP/1.1 101")
try:
    while s.recv(65536):
        pass
except OSError:
    pass
open(done, "w").write(f"{int(time.time() * 1000)} {'upgraded' if ok else 'refused'}\n")
PY
sleep 2
t_rev=$(now_ms)
check "cloche unshare revokes the view link" bash -c '"$1" unshare "$2" "$3" | grep -q revoked' _ "$C" "$cid" "$vsid"
check "... and the viewer's open WebSocket is cut within 5 s" \
	wait_for 5 bash -c '[[ -s $1 ]] && read -r at how <"$1" && [[ $how == upgraded ]] && ((at >= $2))' _ "$ws_done" "$t_rev"
echo "# the revoked link's WebSocket ended $(($(cut -d' ' -f1 "$ws_done" 2>/dev/null || now_ms) - t_rev)) ms after the revoke"
rm -f "$ws_done"
check "... and the proxies refuse it from then on (401 share_revoked)" \
	wait_for 10 bash -c '[[ $(curl -s -H "Authorization: Bearer $1" "http://6080-$2.$3/" | jq -r .error.code) == share_revoked ]]' _ "$vtok" "$cid" "$AIO_DOMAIN"
short_link=$("$C" share "$cid" --ttl 10 2>/dev/null)
check "a share link works until it expires" \
	bash -c '[[ $(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer ${1##*token=}" "http://6080-$2.$3/vnc.html") == 200 ]]' _ "$short_link" "$cid" "$AIO_DOMAIN"
sleep 10
check "... and is refused after (401 share_expired)" \
	bash -c '[[ $(curl -s "$1" | jq -r .error.code) == share_expired ]]' _ "$short_link"
check "cloche release" bash -c '"$1" release "$2" | grep -q "releas"' _ "$C" "$cid"
"$C" get sb-0000000000000000 2>/dev/null
check "an unknown sandbox exits 3" test $? = 3
"$C" acquire --ttl soon 2>/dev/null
check "a bad flag value exits 2" test $? = 2
"$C" acquire --ttl 99999999 2>/dev/null
check "a request the portal refuses (ttl beyond the maximum) exits 2" test $? = 2
CLOCHE_URL=http://127.0.0.1:1 "$C" list 2>/dev/null
check "CLOCHE_URL wins over aio.env, and an unreachable portal exits 7" test $? = 7
ukey=$($C keys create cli-user --json | jq -r .key)
check "cloche keys create makes a user key" bash -c '"$1" keys list --json | jq -e ".keys[] | select(.name == \"cli-user\")" >/dev/null' _ "$C"
check "... that works" bash -c '"$1" --api-key "$2" list >/dev/null' _ "$C" "$ukey"
"$C" --api-key "$ukey" nodes 2>/dev/null
check "... and may not list nodes (exit 4)" test $? = 4
"$C" keys revoke "$(cut -d_ -f2 <<<"$ukey")" >/dev/null
"$C" --api-key "$ukey" list 2>/dev/null
check "a revoked key exits 4" test $? = 4

pids="$(cat "$AIO_RUN/portal.pid") $(cat "$AIO_RUN/node.pid") $(cat "$AIO_RUN/proxy.pid")"
make -s run >"$out" 2>&1
check "a second make run succeeds" test $? = 0
check "... starts nothing twice (same daemons, same sandbox)" \
	bash -c '[[ "$(cat "$1/portal.pid") $(cat "$1/node.pid") $(cat "$1/proxy.pid")" == "$2" && $(cat "$1/sandbox") == "$3" ]]' _ "$AIO_RUN" "$pids" "$id"
check "... and says they are running" grep -q 'is running' "$out"

sid=$(aio_api GET "/sbv1/sandboxes/$id" | jq -r .node_sandbox_id)
make -s stop >"$out" 2>&1
check "make stop succeeds" test $? = 0
check "no cloche daemon is left" bash -c '! pgrep -f "build/bin/cloche-(portal|node|proxy)" >/dev/null'
check "no sandbox process is left" bash -c '! pgrep -f "runsc.*--root $1 " >/dev/null' _ "$AIO_RUNSC_ROOT"
check "no sandbox netns is left" bash -c '! ls /var/run/netns 2>/dev/null | grep -q "^[SR]-$1$"' _ "$sid"
check "no mount of a sandbox is left" bash -c '! grep -q "/sandboxes/" /proc/self/mountinfo'
check "the pool's loop mount is gone" bash -c '! mountpoint -q "$1" || [[ $(findmnt -n -o SOURCE --target "$1") != /dev/loop* ]]' _ "$AIO_POOL"
check "the portal's database stays" test -s "$AIO_STATE/portal.db"
check "... and records the sandbox as released" \
	bash -c '[[ $(sqlite3 "$1" "SELECT state FROM sandboxes WHERE id = '"'"'$2'"'"'") == released ]]' _ "$AIO_STATE/portal.db" "$id"
check "... and passes PRAGMA integrity_check" \
	bash -c '[[ $(sqlite3 "$1" "PRAGMA integrity_check") == ok ]]' _ "$AIO_STATE/portal.db"
tap_exit
