#!/usr/bin/env bash
# Backup and restore of the portal's database, as docs/operations.md says to
# do it, on a whole installation (tests/lib/stack.sh: portal, node agent,
# proxy): deploy/backup-portal.sh copies the database while the portal runs
# and serves a sandbox; the portal then loses its state directory; the
# backup is put back and the portal started: the key still works, the
# sandbox is there, ready, on its node and reachable through the proxy with
# its token.  A sandbox acquired after the backup is unknown to the
# restored portal, and its node destroys it (what docs/operations.md warns
# of: back up often).
# sanitize: yes
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/stack.sh

stack_init
check "a portal, a node agent and a proxy start" stack_up "${CLOCHE_TEST_PREFIX:-t}-ops-$$"
KEY=$(stack_key ops)
acq() { curl -s -m 200 -H "Authorization: Bearer $KEY" -d '{"ttl":900,"wait":180}' "$PORTAL/sbv1/acquire"; }
r=$(acq)
A=$(jq -r .id <<<"$r") TA=$(jq -r .token <<<"$r") NA=$(jq -r .node_sandbox_id <<<"$r")
check "a sandbox A is acquired" test "$(jq -r .state <<<"$r")" = ready
# through the proxy with a sandbox's token: the HTTP status of its health
health() {
	curl -s -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" \
		"http://8080-$1.$STACK_DOMAIN:$STACK_PX_PORT/health"
}

out=$(bash deploy/backup-portal.sh --db "$STACK_WORK/portal.db" --dir "$STACK_WORK/backups" --keep 2)
check "backup-portal.sh copies the database while the portal runs ($(basename "$out"))" \
	test -s "$out" -a "$(stat -c %a "$out")" = 600
check "... a copy that passes its integrity check and holds sandbox A" \
	bash -c '[[ $(sqlite3 "$1" "PRAGMA integrity_check;") == ok ]] && sqlite3 "$1" "SELECT count(*) FROM sandboxes WHERE id = '"'"'$2'"'"';" | grep -qx 1' _ "$out" "$A"
for i in 1 2; do sleep 1.1; bash deploy/backup-portal.sh --db "$STACK_WORK/portal.db" --dir "$STACK_WORK/backups" --keep 2 >/dev/null; done
check "... and keeps only the newest --keep copies" test "$(ls "$STACK_WORK/backups" | wc -l)" = 2
check "a bad --keep is refused (exit 2)" bash -c 'bash deploy/backup-portal.sh --keep 0 >/dev/null 2>&1; [[ $? == 2 ]]'

r=$(acq)
B=$(jq -r .id <<<"$r") NB=$(jq -r .node_sandbox_id <<<"$r")
check "a sandbox B is acquired after the backup" test "$(jq -r .state <<<"$r")" = ready

out=$(ls -1t "$STACK_WORK"/backups/portal-*.db | head -n 1) # the newest, as a restore takes
check "the portal stops" stack_portal_stop
mkdir "$STACK_WORK/lost" && mv "$STACK_WORK"/portal.db* "$STACK_WORK/lost/"
cp "$out" "$STACK_WORK/portal.db"
check "the backup is put back and the portal starts on it" stack_portal_start
check "the key made before the backup still works, and A is ready" \
	bash -c '[[ $(curl -s -H "Authorization: Bearer $1" "$2/sbv1/sandboxes/$3" | jq -r .state) == ready ]]' _ "$KEY" "$PORTAL" "$A"
check "... A stays on its node (several heartbeats later)" \
	bash -c 'sleep 4; body_of "$(api GET /v1/sandboxes)" | jq -r ".sandboxes[].id" | grep -qx "$1"' _ "$NA"
check "... and answers through the proxy with its token" test "$(health "$A" "$TA")" = 200
check "B, acquired after the backup, is unknown to the restored portal (404)" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "$PORTAL/sbv1/sandboxes/$B")" = 404
check "... and its node destroys it" \
	bash -c 'for ((i = 0; i < 150; i++)); do body_of "$(api GET /v1/sandboxes)" | jq -r ".sandboxes[].id" | grep -qx "$1" || exit 0; sleep 0.2; done; exit 1' _ "$NB"
curl -s -H "Authorization: Bearer $KEY" -X POST "$PORTAL/sbv1/sandboxes/$A/release" >/dev/null
check "A is released; the node holds nothing" wait_for 30 node_lists_none
stack_down
tap_exit
