#!/usr/bin/env bash
# sanitize: yes
# cloche-portal over three real node agents (tests/lib/cluster.sh: each in
# its own netns "host" with its own address and pool; real runsc sandboxes
# of a mini template whose init runs only mcp-shell).  What it must show:
# placement spreads by load; warm members are used first; a full cluster
# queues and serves in order when room appears; a full queue is 503 +
# Retry-After; leases expire on time and keepalive prevents it;
# Idempotency-Key; auth and input errors; kill -9 of a node (re-adopted,
# reconciled both ways) and of the portal during 50 concurrent acquires
# (nothing orphaned, nothing handed out twice, the database intact); a silent
# node's sandboxes are lost and it is not placed on; hibernate, wake through
# a proxy (a file survives), fork into 2, a persist lease and an idle sandbox
# hibernate by themselves, a hibernated sandbox is released; the OpenAPI
# document matches the server.
#
#   PORTAL_TEST_ACQUIRES (50)   concurrent acquires of the portal kill test
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/cluster.sh

BUILD=${BUILD:-build}
PORTAL_BIN=$BUILD/bin/cloche-portal
POOL=${CLOCHE_POOL:-/var/lib/cloche}
nacq=${PORTAL_TEST_ACQUIRES:-50}
[[ -x $PORTAL_BIN && -x $CLUSTER_NODE_BIN ]] || { not_ok "$PORTAL_BIN and $CLUSTER_NODE_BIN are built"; tap_exit; }
desktop=$(ls -1dt "$POOL"/templates/desktop@* 2>/dev/null | head -n 1)
[[ -n $desktop ]] || { not_ok "a desktop template exists (make template)"; tap_exit; }

pre=pt$$
tpl_dir=$POOL/pools/$pre-tpl
work=$(mktemp -d)
portal_pid=
px_pids=()
cleanup() {
	[[ -n $portal_pid ]] && kill -9 "$portal_pid" 2>/dev/null
	((${#px_pids[@]} == 0)) || kill -9 "${px_pids[@]}" 2>/dev/null
	cluster_down
	for t in "$tpl_dir"/templates/*; do [[ -d $t ]] && btrfs subvolume delete "$t" >/dev/null 2>&1; done
	rm -rf --one-file-system "$tpl_dir" "$work"
}
trap cleanup EXIT

mkdir -p "$tpl_dir/templates"
t0=$(now_ms)
mini=$(cluster_template_mini "$desktop" "$tpl_dir") || { not_ok "make the mini template"; tap_exit; }
echo "# mini template $(basename "$mini") in $(($(now_ms) - t0)) ms"
cluster_up "$pre" 3 "$mini" || { not_ok "set up three node hosts"; tap_exit; }
pport=$(free_port)
PORTAL=http://$CLUSTER_BR_IP:$pport
export CLUSTER_PORTAL_URL=$PORTAL

# portal_start [OPTION...]: on the bridge address, the test's limits.
portal_start() {
	"$PORTAL_BIN" --listen "$CLUSTER_BR_IP" --port "$pport" --db "$work/portal.db" \
		--token-key-file "$work/token.key" --node-credential-file "$CLUSTER_WORK/cred" \
		--default-template mini --node-timeout 3s --heartbeat-interval 500ms --best-of 3 \
		--ttl-max 1h --wait-max 120s --memory-default-mb 512 --memory-max-mb 4096 "$@" \
		>>"$work/portal.log" 2>&1 &
	portal_pid=$!
	wait_for 10 curl -sf -o /dev/null "$PORTAL/healthz"
}
portal_stop() {
	local rc=0
	kill -TERM "$portal_pid" 2>/dev/null
	wait "$portal_pid" || rc=$?
	portal_pid=
	return "$rc"
}
# pcall KEY METHOD PATH [BODY [IDEMPOTENCY-KEY]]: prints "<status> <body>".
pcall() {
	local out body
	body=$(mktemp -p "$work" b.XXXXXX)
	out=$(curl -s -m 200 -o "$body" -w '%{http_code}' -X "$2" ${1:+-H "Authorization: Bearer $1"} \
		${5:+-H "Idempotency-Key: $5"} ${4:+-H 'Content-Type: application/json' --data-binary "$4"} \
		"$PORTAL$3") || out=000
	printf '%s %s\n' "$out" "$(cat "$body")"
	rm -f "$body"
}
st() { cut -d' ' -f1 <<<"$1"; }
js() { cut -d' ' -f2- <<<"$1" | jq -r "$2" 2>/dev/null; }
field_is() { [[ $(st "$1") == 400 && $(js "$1" .error.field) == "$2" ]]; }
sbstate() { js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$1")" .state; }
warm_ready() { (($(js "$(pcall "$ADMIN" GET /sbv1/templates)" '[.templates[].warm_ready] | add // 0') >= $1)); }
nodes_up() { (($(js "$(pcall "$ADMIN" GET /sbv1/nodes)" '[.nodes[] | select(.state == "up")] | length') == $1)); }
node_of() { js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$1")" .node; }
# The non-pooled sandboxes node I lists: "sid" lines.
node_leased() { cluster_api "$1" GET /v1/sandboxes | cut -d' ' -f2- | jq -r '.sandboxes[] | select(.pooled | not) | .id'; }
export -f pcall st js sbstate node_leased cluster_api cluster_url cluster_ip
export PORTAL CLUSTER_CRED CLUSTER_WORK
release_all() {
	local id
	for id in $(js "$(pcall "$ADMIN" GET '/sbv1/sandboxes?state=ready&limit=500')" '.sandboxes[].id'); do
		pcall "$ADMIN" POST "/sbv1/sandboxes/$id/release" >/dev/null
	done
}

portal_start || { not_ok "the portal starts"; tap_exit; }
ADMIN=$("$PORTAL_BIN" --db "$work/portal.db" key-create admin admin)
export ADMIN
for i in 1 2 3; do cluster_start "$i" --template-name mini --max-sandboxes 2 || not_ok "node $i starts"; done
check "three nodes register by heartbeat" wait_for 10 nodes_up 3
U1=$(js "$(pcall "$ADMIN" POST /sbv1/keys '{"name":"u1"}')" .key)
U2=$(js "$(pcall "$ADMIN" POST /sbv1/keys '{"name":"u2","role":"user"}')" .key)
check "an admin makes user keys" test -n "$U1" -a -n "$U2"

# --- auth and input errors ---------------------------------------------------
r=$(pcall "" GET /sbv1/sandboxes)
check "no key: 401 with a JSON error" bash -c '[[ $(st "$1") == 401 && $(js "$1" .error.code) == unauthorized ]]' _ "$r"
check "a made-up key: 401" test "$(st "$(pcall "ck_000000000000_nope" GET /sbv1/sandboxes)")" = 401
check "malformed JSON: 400" test "$(st "$(pcall "$U1" POST /sbv1/acquire '{"ttl":')")" = 400
check "unknown template: 400 naming template" field_is "$(pcall "$U1" POST /sbv1/acquire '{"template":"nope"}')" template
check "ttl of the wrong type: 400 naming ttl" field_is "$(pcall "$U1" POST /sbv1/acquire '{"ttl":"long"}')" ttl
check "ttl beyond the maximum: 400 naming ttl" field_is "$(pcall "$U1" POST /sbv1/acquire '{"ttl":7200}')" ttl
check "memory of the wrong type: 400 naming resources.memory_mb" \
	field_is "$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":"1G"}}')" resources.memory_mb
check "a label that is not a string: 400 naming it" field_is "$(pcall "$U1" POST /sbv1/acquire '{"labels":{"a":1}}')" labels.a
check "an unknown field: 400 naming it" field_is "$(pcall "$U1" POST /sbv1/acquire '{"tll":5}')" tll
check "a user may not list nodes: 403" test "$(st "$(pcall "$U1" GET /sbv1/nodes)")" = 403

# --- cloche-proxy on every node: routes from the portal, forwarding -----------
# A proxy per node host, on its address:8000, reaching its own agent's
# socket; a sandbox is reached through any of them (the owner's connects
# through its node agent, the others forward to the owner's proxy).
PROXY_BIN=$BUILD/bin/cloche-proxy
px_start() {
	nsenter --net="/var/run/netns/$(cluster_host "$1")" "$PROXY_BIN" --listen "$(cluster_ip "$1")" \
		--port 8000 --admin-port 7081 --portal "$PORTAL" --node-credential-file "$CLUSTER_WORK/cred" \
		--node-name "$pre-n$1" --advertise "$(cluster_ip "$1"):8000" \
		--node-socket "$CLUSTER_WORK/n$1.sock" --token-key-file "$work/token.key" \
		--trusted-peers "$(cluster_ip 1),$(cluster_ip 2),$(cluster_ip 3)" --report-interval 1s \
		--workers 1 >>"$work/proxy$1.log" 2>&1 &
	px_pids+=($!)
}
px_get() { # I ID PORT PATH TOKEN: status through node I's proxy
	curl -s -m 60 -o /dev/null -w '%{http_code}' -H "Host: $3-$2.cloche.localhost" \
		-H "Authorization: Bearer $5" "http://$(cluster_ip "$1"):8000$4"
}
px_admin() { # I PATH
	nsenter --net="/var/run/netns/$(cluster_host "$1")" curl -s -m 5 \
		-H "Authorization: Bearer $CLUSTER_CRED" "http://127.0.0.1:7081$2"
}
export -f px_get px_admin cluster_host
export pre CLUSTER_PREFIX
for i in 1 2 3; do px_start "$i"; done
check "a proxy starts on every node" wait_for 10 bash -c 'for i in 1 2 3; do px_admin "$i" /healthz | grep -q true || exit 1; done'
r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640},"ttl":600}')
pid_=$(js "$r" .id) ptok=$(js "$r" .token) pnode=$(js "$r" .node)
owner=${pnode##*-n}
check "the portal knows the owner's proxy (from its activity reports)" \
	wait_for 10 bash -c '[[ $(curl -s -H "Authorization: Bearer $CLUSTER_CRED" "$PORTAL/sbv1/routes/$1" | jq -r .proxy) == "$2" ]]' _ "$pid_" "$(cluster_ip "$owner"):8000"
for j in 1 2 3; do
	check "sandbox on node $owner through node $j's proxy: 200" \
		bash -c '[[ $(px_get "$1" "$2" 8080 /health "$3") == 200 ]]' _ "$j" "$pid_" "$ptok"
done
check "... the owner's proxy served all three (the others forwarded to it)" \
	bash -c '(($(px_admin "$1" "/v1/sandboxes/$2" | jq .requests) >= 3))' _ "$owner" "$pid_"
check "... and the portal records its last activity" \
	wait_for 10 bash -c '[[ $(js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$1")" .last_activity_at) != null ]]' _ "$pid_"
check "a token for another sandbox: 403 through any proxy" \
	bash -c '[[ $(px_get 1 sb-0000000000000000 8080 /health "$1") == 403 ]]' _ "$ptok"
r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640},"ttl":600,"wait":0}')
sid2=$(js "$r" .id) stok2=$(js "$r" .token)
check "an acquire with wait 0 answers 202 while the sandbox starts" test "$(st "$r")" = 202
check "... and a request for it is held until it is ready, then served" \
	bash -c '[[ $(px_get 2 "$1" 8080 /health "$2") == 200 ]]' _ "$sid2" "$stok2"
pcall "$U1" POST "/sbv1/sandboxes/$pid_/release" >/dev/null
check "a released sandbox's token opens nothing: 404" \
	wait_for 15 bash -c '[[ $(px_get 3 "$1" 8080 /health "$2") == 404 ]]' _ "$pid_" "$ptok"
# --- share links: made, listed, scoped, revoked; the proxies enforce them ----------
px_err() { # I ID PORT PATH TOKEN: the error code through node I's proxy ("" for none)
	curl -s -m 60 -H "Host: $3-$2.cloche.localhost" -H "Authorization: Bearer $5" \
		"http://$(cluster_ip "$1"):8000$4" | jq -r '.error.code // ""' 2>/dev/null
}
export -f px_err field_is wait_for
r=$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/shares" '{"ttl":600,"label":"pair"}')
shid=$(js "$r" .id) shtok=$(js "$r" .token)
check "POST shares: 201, view-only by default, a link to the desktop with a share token" \
	bash -c '[[ $(st "$1") == 201 && $(js "$1" .mode) == view && $(js "$1" .state) == active && $(js "$1" .url) == *6080-$2.*token=sh1.$2.* ]]' _ "$r" "$sid2"
check "... refused for bad input: mode, ttl, label, unknown field (400 with the field)" bash -c '
	field_is "$(pcall "$1" POST "/sbv1/sandboxes/$2/shares" "{\"mode\":\"edit\"}")" mode &&
	field_is "$(pcall "$1" POST "/sbv1/sandboxes/$2/shares" "{\"ttl\":5}")" ttl &&
	field_is "$(pcall "$1" POST "/sbv1/sandboxes/$2/shares" "{\"label\":7}")" label &&
	field_is "$(pcall "$1" POST "/sbv1/sandboxes/$2/shares" "{\"to\":1}")" to' _ "$U1" "$sid2"
check "... another user's sandbox: 404, and nothing made" \
	bash -c '[[ $(st "$(pcall "$1" POST "/sbv1/sandboxes/$2/shares" "{}")") == 404 && $(js "$(pcall "$3" GET "/sbv1/sandboxes/$2/shares")" ".shares | length") == 1 ]]' _ "$U2" "$sid2" "$U1"
check "GET shares lists it with its link; the event log says it was made" \
	bash -c '[[ $(js "$(pcall "$1" GET "/sbv1/sandboxes/$2/shares")" ".shares[0].token") == "$3" ]] && pcall "$1" GET "/sbv1/sandboxes/$2/events" | grep -q "share $4 made (view"' _ "$U1" "$sid2" "$shtok" "$shid"
check "the share token opens the desktop's port only: 403 share_port on 8080" \
	bash -c '[[ $(px_err 1 "$1" 8080 /health "$2") == share_port ]]' _ "$sid2" "$shtok"
check "... and passes the proxy on 6080 (this mini sandbox has no desktop: 502 port_closed)" \
	bash -c '[[ $(px_err 2 "$1" 6080 / "$2") == port_closed ]]' _ "$sid2" "$shtok"
check "... not for another sandbox (403)" \
	bash -c '[[ $(px_get 1 "$1" 6080 / "$2") == 403 ]]' _ sb-0000000000000000 "$shtok"
r=$(pcall "$U1" DELETE "/sbv1/sandboxes/$sid2/shares/$shid")
check "DELETE revokes it (200, state revoked); again: 404" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" .state) == revoked && $(st "$(pcall "$2" DELETE "/sbv1/sandboxes/$3/shares/$4")") == 404 ]]' _ "$r" "$U1" "$sid2" "$shid"
for j in 1 2 3; do
	check "... every proxy refuses it within seconds (node $j: 401 share_revoked)" \
		wait_for 10 bash -c '[[ $(px_err "$1" "$2" 6080 / "$3") == share_revoked ]]' _ "$j" "$sid2" "$shtok"
done
check "... while the sandbox's own token still opens it" \
	bash -c '[[ $(px_get 1 "$1" 8080 /health "$2") == 200 ]]' _ "$sid2" "$stok2"
check "a forged share token (another MAC) is refused: 401" \
	bash -c '[[ $(px_get 1 "$1" 6080 / "${2%.*}.AAAA") == 401 ]]' _ "$sid2" "$shtok"
# --- hibernate, wake (through a proxy), fork, persist, the idle policy ----------
# Real checkpoints of mini sandboxes; each costs seconds, so one sandbox goes
# through hibernate -> wake -> fork.  Its node restarts with room for the
# fork's children and with its proxy's admin URL (drained before a checkpoint).
sh_in() { # NODE_SID CMD: a shell command inside, through mcp-shell from the router netns
	nsenter --net="/var/run/netns/R-$1" node tests/e2e/mcp-call.mjs --url http://10.0.2.15:8889/mcp \
		--tool run_command --args "$(jq -nc --arg c "$2" '{command: $c}')" --timeout-ms 60000
}
export -f sh_in
hn=$(node_of "$sid2")
hn=${hn##*-n}
hsid=$(js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$sid2")" .node_sandbox_id)
cluster_stop "$hn"
cluster_start "$hn" --template-name mini --max-sandboxes 4 --proxy-admin http://127.0.0.1:7081 ||
	not_ok "node $hn restarts"
wait_for 10 nodes_up 3
check "a file written inside before the hibernate" \
	bash -c 'sh_in "$1" "echo kept-$2 > /var/tmp/hib; cat /var/tmp/hib" | grep -q "kept-$2"' _ "$hsid" "$pre"
t_h=$(now_ms)
r=$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/hibernate")
echo "# hibernate answered in $(($(now_ms) - t_h)) ms"
check "hibernate: 200, hibernated, with the node's checkpoint figures" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" .state) == hibernated && $(js "$1" .checkpoint.generation) -ge 1 && $(js "$1" .hibernated_at) != null ]]' _ "$r"
check "... its node lists it hibernated" \
	bash -c '[[ $(cluster_api "$1" GET "/v1/sandboxes/$2" | cut -d" " -f2- | jq -r .state) == hibernated ]]' _ "$hn" "$hsid"
check "... a second hibernate answers it as it is" test "$(js "$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/hibernate")" .state)" = hibernated
check "... a fork of a hibernated sandbox: 409" test "$(st "$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/fork" '{"count":2}')")" = 409
t_w=$(now_ms)
check "a request through another node's proxy wakes it and is served" \
	bash -c '[[ $(px_get "$1" "$2" 8080 /health "$3") == 200 ]]' _ "$((hn % 3 + 1))" "$sid2" "$stok2"
echo "# request held through the wake: $(($(now_ms) - t_w)) ms"
check "... the sandbox is ready, woken on its node, lease renewed" \
	bash -c '[[ $(sbstate "$1") == ready ]] && pcall "$2" GET "/sbv1/sandboxes/$1/events" | grep -q "woken on"' _ "$sid2" "$ADMIN"
check "... the file written before the hibernate is there" \
	bash -c 'sh_in "$1" "cat /var/tmp/hib" | grep -q "kept-$2"' _ "$hsid" "$pre"
check "/metrics counts the hibernate and the wake" \
	bash -c 'm=$(curl -s "$1/metrics"); grep -q "^cloche_portal_hibernations_total{result=\"ok\"} [1-9]" <<<"$m" && grep -q "^cloche_portal_wake_seconds_count [1-9]" <<<"$m"' _ "$PORTAL"
t_f=$(now_ms)
r=$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/fork" '{"count":2}')
echo "# fork into 2 answered in $(($(now_ms) - t_f)) ms"
k1=$(js "$r" '.children[0].id') k2=$(js "$r" '.children[1].id') kt1=$(js "$r" '.children[0].token')
check "fork into 2: 200, two ready children forked from it, the parent ready" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" "[.children[] | select(.state == \"ready\" and .forked_from == \"$2\")] | length") == 2 && $(js "$1" .parent.state) == ready ]]' _ "$r" "$sid2"
check "... with their own ids, tokens and URLs" \
	bash -c '[[ $(js "$1" "[.children[].id, .parent.id] | unique | length") == 3 && $(js "$1" "[.children[].token, .parent.token] | unique | length") == 3 && $(js "$1" ".children[0].urls.mcp.shell") == *"$2"* ]]' _ "$r" "$k1"
check "... a child answers through a proxy with its token" \
	bash -c '[[ $(px_get 1 "$1" 8080 /health "$2") == 200 ]]' _ "$k1" "$kt1"
check "... and has the parent's file" \
	bash -c 'sh_in "$1" "cat /var/tmp/hib" | grep -q "kept-$2"' _ "$(js "$r" '.children[0].node_sandbox_id')" "$pre"
check "... the parent's token does not open a child (403)" \
	bash -c '[[ $(px_get 1 "$1" 8080 /health "$2") == 403 ]]' _ "$k2" "$stok2"
check "... the parent keeps running, and its events record the fork" \
	bash -c '[[ $(px_get "$1" "$2" 8080 /health "$3") == 200 ]] && pcall "$4" GET "/sbv1/sandboxes/$2/events" | grep -q "forked into 2"' _ "$hn" "$sid2" "$stok2" "$ADMIN"
for x in "$k1" "$k2"; do pcall "$U1" POST "/sbv1/sandboxes/$x/release" >/dev/null; done
# A wake asked for while it hibernates (a noVNC tab reconnecting at once)
# follows the hibernate; each caller gets its own call's outcome.
pcall "$U1" POST "/sbv1/sandboxes/$sid2/hibernate" >"$work/hib-during" &
hib_pid=$!
wait_for 20 bash -c '[[ $(sbstate "$1") == hibernating ]]' _ "$sid2"
r=$(pcall "$U1" POST "/sbv1/sandboxes/$sid2/wake")
wait "$hib_pid"
check "a wake during a hibernate: the hibernate answers 200 hibernated" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" .state) == hibernated ]]' _ "$(cat "$work/hib-during")"
check "... and the wake 200 ready, after it" \
	bash -c '[[ $(st "$1") == 200 && $(js "$1" .state) == ready ]]' _ "$r"
# A persist lease that runs out hibernates; an idle sandbox hibernates by itself.
pid_p=$(js "$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640},"ttl":3,"persist":true}')" .id)
pid_i=$(js "$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640},"ttl":600,"idle_timeout":3}')" .id)
check "a persist lease that runs out hibernates instead of being released" \
	wait_for 60 bash -c '[[ $(sbstate "$1") == hibernated ]] && pcall "$2" GET "/sbv1/sandboxes/$1/events" | grep -q "lease expired (persist)"' _ "$pid_p" "$ADMIN"
check "a sandbox idle for its idle_timeout (3 s) hibernates by itself" \
	wait_for 60 bash -c '[[ $(sbstate "$1") == hibernated ]] && pcall "$2" GET "/sbv1/sandboxes/$1/events" | grep -q "idle for"' _ "$pid_i" "$ADMIN"
check "idle_timeout of the wrong kind: 400 naming it" field_is "$(pcall "$U1" POST /sbv1/acquire '{"idle_timeout":-1}')" idle_timeout
pn=$(node_of "$pid_p")
psid=$(js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$pid_p")" .node_sandbox_id)
r=$(pcall "$U1" POST "/sbv1/sandboxes/$pid_p/release")
check "release of a hibernated sandbox: releasing, then released" \
	bash -c '[[ $(st "$1") == 200 ]]' _ "$r"
check "... and its node no longer has it" \
	wait_for 30 bash -c '[[ $(sbstate "$1") == released ]] && ! cluster_api "$2" GET /v1/sandboxes | cut -d" " -f2- | jq -r ".sandboxes[].id" | grep -qx "$3"' _ "$pid_p" "${pn##*-n}" "$psid"
pcall "$U1" POST "/sbv1/sandboxes/$pid_i/release" >/dev/null
pcall "$U1" POST "/sbv1/sandboxes/$sid2/release" >/dev/null
for p_ in "${px_pids[@]}"; do kill -TERM "$p_"; done
rc_=0
for p_ in "${px_pids[@]}"; do wait "$p_" || rc_=1; done
px_pids=()
check "the proxies stop on SIGTERM with status 0" test "$rc_" = 0
check "... and logged no error" bash -c '! grep -h "\"level\":\"error\"" "$1"/proxy*.log' _ "$work"
check "every sandbox of that part is released" \
	wait_for 30 bash -c '[[ $(js "$(pcall "$ADMIN" GET "/sbv1/sandboxes?state=releasing")" ".sandboxes | length") == 0 ]]'
cluster_stop "$hn"
cluster_start "$hn" --template-name mini --max-sandboxes 2 || not_ok "node $hn restarts"
wait_for 10 nodes_up 3

# --- placement spreads by load; full nodes queue; a release serves the queue -
# Non-default memory, so every acquire makes a new sandbox (no warm pools yet).
# Never a bare `wait`: the portal and the node agents are children too.
jobs_=()
bg() { "$@" & jobs_+=($!); }
waitbg() { wait "${jobs_[@]}"; jobs_=(); }
for i in 1 2 3; do bg pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":768},"ttl":600}' >"$work/sp$i"; done
waitbg
ids=() nodes=()
for i in 1 2 3; do ids+=("$(js "$(cat "$work/sp$i")" .id)"); nodes+=("$(js "$(cat "$work/sp$i")" .node)"); done
check "three concurrent acquires are ready" bash -c '[[ $(cat "$@" | grep -c "^201 ") == 3 ]]' _ "$work"/sp?
check "... on three different nodes (placement by load)" \
	test "$(printf '%s\n' "${nodes[@]}" | sort -u | grep -c .)" = 3
check "the sandbox answers on its node (health through the port-connect path)" \
	bash -c 'printf "GET /health HTTP/1.0\r\n\r\n" | timeout 10 "$1" --connect-socket "$2" connect "$3" 8080 | head -1 | grep -q " 200 "' \
	_ "$CLUSTER_NODE_BIN" "$CLUSTER_WORK/n${nodes[0]##*-n}.sock" "$(js "$(cat "$work/sp1")" .node_sandbox_id)"
for i in 4 5 6; do bg pcall "$U2" POST /sbv1/acquire '{"resources":{"memory_mb":768},"ttl":600}' >"$work/sp$i"; done
waitbg
check "three more fill every node (2 each)" bash -c '[[ $(cat "$@" | grep -c "^201 ") == 3 ]]' _ "$work"/sp[456]
check "no node holds more than its maximum" \
	bash -c 'for i in 1 2 3; do (( $(node_leased $i | wc -l) <= 2 )) || exit 1; done'
# Two waiters in order, then one release: the first waiter gets the room.
pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":768},"wait":60}' >"$work/q1" &
q1=$!
sleep 0.5
pcall "$U2" POST /sbv1/acquire '{"resources":{"memory_mb":768},"wait":60}' >"$work/q2" &
q2=$!
sleep 0.5
check "a full cluster queues: /metrics shows 2 waiting" \
	bash -c 'curl -s "$1/metrics" | grep -q "^cloche_portal_queue_depth 2$"' _ "$PORTAL"
t_rel=$(now_ms)
pcall "$U1" POST "/sbv1/sandboxes/${ids[0]}/release" >/dev/null
wait "$q1"
t_q1=$(now_ms)
check "a release serves the first waiter (FIFO)" test "$(st "$(cat "$work/q1")")" = 201
echo "# first waiter ready $((t_q1 - t_rel)) ms after the release (destroy + create)"
check "... the second still waits" kill -0 "$q2"
pcall "$U1" POST "/sbv1/sandboxes/${ids[1]}/release" >/dev/null
wait "$q2"
check "the next release serves the second" test "$(st "$(cat "$work/q2")")" = 201
check "the queue-wait histogram counted them" \
	bash -c 'curl -s "$1/metrics" | grep -q "^cloche_portal_queue_wait_seconds_count [1-9]"' _ "$PORTAL"
# A full queue answers at once.
portal_stop
portal_start --queue-max 1 || not_ok "the portal restarts"
wait_for 5 nodes_up 3
pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":768},"wait":30}' >"$work/qf" &
qf=$!
sleep 0.5
r=$(curl -s -m 10 -D "$work/h" -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $U2" \
	--data-binary '{"resources":{"memory_mb":768},"wait":30}' "$PORTAL/sbv1/acquire")
check "a full queue: 503 with Retry-After" bash -c '[[ $1 == 503 ]] && grep -qi "^retry-after: [0-9]" "$2"' _ "$r" "$work/h"
r=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $U2" \
	--data-binary '{"resources":{"memory_mb":768},"wait":0}' "$PORTAL/sbv1/acquire")
check "wait 0 on a full cluster: 503 at once" test "$r" = 503
for i in 2 3 4 5 6 q1 q2; do
	id=$(js "$(cat "$work/sp$i" 2>/dev/null || cat "$work/$i")" .id)
	[[ -n $id && $id != null ]] && pcall "$ADMIN" POST "/sbv1/sandboxes/$id/release" >/dev/null
done
wait "$qf"
check "the queued acquire got room when they went" test "$(st "$(cat "$work/qf")")" = 201
pcall "$ADMIN" POST "/sbv1/sandboxes/$(js "$(cat "$work/qf")" .id)/release" >/dev/null

# Another user's sandbox is not there for them.
r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":768},"labels":{"who":"u1"}}')
mine=$(js "$r" .id)
check "another user's sandbox: 404 on get" test "$(st "$(pcall "$U2" GET "/sbv1/sandboxes/$mine")")" = 404
check "... 404 on release" test "$(st "$(pcall "$U2" POST "/sbv1/sandboxes/$mine/release")")" = 404
check "... and not in their list" bash -c '[[ $(js "$(pcall "$1" GET "/sbv1/sandboxes?label=who%3Du1")" ".sandboxes | length") == 0 ]]' _ "$U2"
check "the owner's list has it (label filter)" bash -c '[[ $(js "$(pcall "$1" GET "/sbv1/sandboxes?label=who%3Du1")" ".sandboxes[0].id") == "$2" ]]' _ "$U1" "$mine"
U3=$(pcall "$ADMIN" POST /sbv1/keys '{"name":"u3"}')
check "a revoked key: 401" bash -c '
	pcall "$1" DELETE "/sbv1/keys/$(js "$2" .id)" >/dev/null
	[[ $(st "$(pcall "$(js "$2" .key)" GET /sbv1/sandboxes)") == 401 ]]' _ "$ADMIN" "$U3"

# --- warm pools first ----------------------------------------------------------
for i in 1 2 3; do cluster_stop "$i"; cluster_start "$i" --template-name mini --max-sandboxes 3 --warm-pool mini=1; done
check "every node fills its warm pool" wait_for 60 warm_ready 3
r=$(pcall "$U1" POST /sbv1/acquire '{}')
check "an acquire with the default resources takes a warm member" \
	bash -c '[[ $(st "$1") == 201 ]] && pcall "$2" GET "/sbv1/sandboxes/$(js "$1" .id)/events" | grep -q "claimed pool member"' _ "$r" "$ADMIN"
echo "# warm acquire answered in $(curl -s -o /dev/null -w '%{time_total}' -X POST -H "Authorization: Bearer $U1" --data-binary '{"ttl":60}' "$PORTAL/sbv1/acquire") s"

# --- leases, keepalive, idempotency ------------------------------------------
r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":2}')
lid=$(js "$r" .id)
check "a 2 s lease is released when it runs out" wait_for 6 bash -c '[[ $(sbstate "$1") == releas* ]]' _ "$lid"
ev=$(pcall "$ADMIN" GET "/sbv1/sandboxes/$lid/events")
late=$(jq -r --arg exp "$(js "$r" .expires_at)" '
	def ms: sub("Z$"; "") | split(".") | ((.[0] + "Z" | fromdateiso8601) * 1000 + (.[1] | tonumber));
	[.events[] | select(.to == "releasing")][0].at | ms - ($exp | ms)' <<<"$(cut -d' ' -f2- <<<"$ev")")
check "... within a second of expires_at (${late} ms)" bash -c '(( $1 >= 0 && $1 < 1000 ))' _ "${late:-99999}"
check "... with the reason" bash -c 'grep -q "lease expired" <<<"$1"' _ "$ev"
r=$(pcall "$U1" POST /sbv1/acquire '{"ttl":2}')
kid=$(js "$r" .id)
for i in 1 2 3 4 5; do sleep 1; pcall "$U1" POST "/sbv1/sandboxes/$kid/keepalive" '{"ttl":2}' >/dev/null; done
check "keepalive every second keeps a 2 s lease for 5 s" test "$(sbstate "$kid")" = ready
pcall "$U1" POST "/sbv1/sandboxes/$kid/release" >/dev/null
a=$(pcall "$U1" POST /sbv1/acquire '{"ttl":60}' same-key-1)
b=$(pcall "$U1" POST /sbv1/acquire '{"ttl":60}' same-key-1)
check "Idempotency-Key: a retry returns the same sandbox" bash -c '[[ $(js "$1" .id) == $(js "$2" .id) && $(st "$2") == 201 ]]' _ "$a" "$b"
c=$(pcall "$U2" POST /sbv1/acquire '{"ttl":60}' same-key-1)
check "... per API key: another user's same key is another sandbox" bash -c '[[ $(js "$1" .id) != $(js "$2" .id) ]]' _ "$a" "$c"
for i in 1 2 3; do bg pcall "$U1" POST /sbv1/acquire '{"ttl":60}' same-key-2 >"$work/i$i"; done
waitbg
check "... three concurrent retries get one sandbox" bash -c '[[ $(cat "$@" | cut -d" " -f2- | jq -r .id | sort -u | wc -l) == 1 ]]' _ "$work"/i?

# --- a node agent killed and restarted -----------------------------------------
release_all
r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640}}')
kid=$(js "$r" .id)
kn=$(js "$r" .node)
kn=${kn##*-n}
cluster_kill "$kn"
cluster_start "$kn" --template-name mini --max-sandboxes 3 --warm-pool mini=1
sleep 2
check "kill -9 of a node agent and restart: its leased sandbox stays ready" test "$(sbstate "$kid")" = ready
check "... and on the node (re-adopted)" bash -c 'node_leased "$1" | grep -qx "$2"' _ "$kn" "$(js "$r" .node_sandbox_id)"
other=$((kn % 3 + 1))
r=$(cluster_api "$other" POST /v1/sandboxes '{"id":"'"$pre"'-byhand","memory_mb":640}')
check "a sandbox made on a node behind the portal's back ..." test "$(cut -d' ' -f1 <<<"$r")" = 201
check "... is destroyed as an orphan" wait_for 10 bash -c '! node_leased "$1" | grep -qx "$2"' _ "$other" "$pre-byhand"
cluster_api "$kn" DELETE "/v1/sandboxes/$(js "$(pcall "$ADMIN" GET "/sbv1/sandboxes/$kid")" .node_sandbox_id)" >/dev/null
check "a leased sandbox its node no longer has fails, with the reason" \
	wait_for 10 bash -c '[[ $(sbstate "$1") == failed ]] && pcall "$2" GET "/sbv1/sandboxes/$1" | grep -q "no longer has it"' _ "$kid" "$ADMIN"

# --- a node that goes silent -------------------------------------------------
r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640}}')
lost_id=$(js "$r" .id)
ln=$(js "$r" .node)
ln=${ln##*-n}
lost_sid=$(js "$r" .node_sandbox_id)
cluster_kill "$ln"
check "a node silent past the timeout is down" wait_for 8 bash -c '
	[[ $(js "$(pcall "$1" GET /sbv1/nodes)" ".nodes[] | select(.name == \"$2\") | .state") == down ]]' _ "$ADMIN" "$pre-n$ln"
check "... its sandboxes are lost" test "$(sbstate "$lost_id")" = lost
placed=
for i in 1 2 3; do
	r=$(pcall "$U1" POST /sbv1/acquire '{"resources":{"memory_mb":640}}')
	placed+=" $(js "$r" .node)"
	pcall "$U1" POST "/sbv1/sandboxes/$(js "$r" .id)/release" >/dev/null
done
check "... and nothing is placed on it (${placed# })" bash -c '! grep -qw "$1" <<<"$2"' _ "$pre-n$ln" "$placed"
cluster_start "$ln" --template-name mini --max-sandboxes 3 --warm-pool mini=1
check "when it comes back, its lost sandbox is destroyed there" \
	wait_for 15 bash -c '! node_leased "$1" | grep -qx "$2"' _ "$ln" "$lost_sid"
check "... and the lost record stays lost" test "$(sbstate "$lost_id")" = lost

# --- kill -9 of the portal during concurrent acquires ----------------------------
release_all
portal_stop
portal_start --queue-max 100 || not_ok "the portal restarts"
wait_for 10 warm_ready 3
keys=()
for c in 1 2 3 4 5; do keys+=("$(js "$(pcall "$ADMIN" POST /sbv1/keys "{\"name\":\"c$c\"}")" .key)"); done
export work
acq() { # CLIENT N ROUND: acquire with Idempotency-Key k<N>, answer into a file
	pcall "${keys[$1]}" POST /sbv1/acquire '{"ttl":600,"wait":40}' "k$2" >"$work/r$3-$1-$2"
}
for ((n = 0; n < nacq; n++)); do bg acq $((n % 5)) "$n" 1; done
sleep 1.5
kill -9 "$portal_pid"
wait "$portal_pid" 2>/dev/null
portal_pid=
waitbg
echo "# round 1 before the kill: $(cat "$work"/r1-* | grep -c '^201 ') ready, $(cat "$work"/r1-* | grep -c '^000') cut off"
portal_start --queue-max 100 || not_ok "the portal restarts after kill -9"
wait_for 10 nodes_up 3
for ((n = 0; n < nacq; n++)); do bg acq $((n % 5)) "$n" 2; done
waitbg
settled() { [[ $(sqlite3 "$work/portal.db" "SELECT COUNT(*) FROM sandboxes WHERE state IN ('queued','placing','starting','releasing')") == 0 ]]; }
check "after the restart every acquire settles" wait_for 60 settled
check "no sandbox id was answered to two clients" bash -c '
	for f in "$1"/r[12]-*; do [[ $(head -c 3 "$f") == 201 ]] && echo "${f##*-} $(cut -d" " -f2- "$f" | jq -r .id)"; done |
		sort -u | awk "{print \$2}" | sort | uniq -d | grep -q . && exit 1; exit 0' _ "$work"
check "a retry after the restart returns what round 1 answered" bash -c '
	for f in "$1"/r1-*; do [[ $(head -c 3 "$f") == 201 ]] || continue; g=${f/r1-/r2-}
		[[ $(cut -d" " -f2- "$f" | jq -r .id) == $(cut -d" " -f2- "$g" | jq -r .id) ]] || exit 1; done' _ "$work"
echo "# round 2: $(cat "$work"/r2-* | grep -c '^201 ') ready, $(cat "$work"/r2-* | grep -c '^503 ') no room within the wait"
owned() { # every non-pooled sandbox on the nodes is a ready row's, and every ready row's is on its node
	local i sid
	sqlite3 "$work/portal.db" "SELECT node || ' ' || node_sid FROM sandboxes WHERE state = 'ready'" | sort >"$work/rows"
	for i in 1 2 3; do node_leased "$i" | sed "s/^/$pre-n$i /"; done | sort >"$work/nodes"
	diff "$work/rows" "$work/nodes" >&2
}
check "every sandbox on the nodes is leased exactly once, none orphaned" wait_for 15 owned
check "the database passes PRAGMA integrity_check" test "$(sqlite3 "$work/portal.db" 'PRAGMA integrity_check')" = ok
check "no row was left half-made" bash -c '[[ $(sqlite3 "$1" "SELECT COUNT(*) FROM sandboxes WHERE state IN (\"queued\",\"placing\",\"starting\")") == 0 ]]' _ "$work/portal.db"

# --- the OpenAPI document, metrics, logs, SIGTERM ------------------------------
release_all
sed -n 's/^\t\t{\(NULL\|"\([A-Z]*\)"\), "\([^"]*\)", h_[a-z_]*},$/\2 \3/p' portal/pt_api.c | sed 's/^ /ANY /' >"$work/routes"
(cd tests/e2e && node portal-openapi-test.mjs --url "$PORTAL" --key "$ADMIN" --routes "$work/routes" --node-cred "$CLUSTER_CRED") |
	tap_prefix 'openapi: '
for m in acquire_seconds_bucket queue_wait_seconds_count queue_depth 'sandboxes{state="released"' node_up \
	node_memory_bytes node_sandboxes lease_expiries_total; do
	check "/metrics has cloche_portal_$m" bash -c 'curl -s "$1/metrics" | grep -q "^cloche_portal_$2"' _ "$PORTAL" "$m"
done
check "every portal log line is JSON" bash -c '! grep -v "^{" "$1" | grep -q .' _ "$work/portal.log"
check "no key is ever logged" bash -c '! grep -q "ck_[0-9a-f]\{12\}_" "$1"' _ "$work/portal.log"
portal_stop
check "SIGTERM: the portal exits 0" test $? = 0
tap_exit
