#!/usr/bin/env bash
# The units under a real systemd.  This machine's PID 1 is not systemd, so
# the test boots one in a container (systemd-nspawn, host network) whose
# root is a throw-away overlay of this machine's root: everything the
# install writes (users, /usr/local, /etc/cloche, /var/lib/cloche-portal)
# lands in a tmpfs and goes with the container.  In it:
#   - deploy/install.sh portal, as an operator runs it: users, binaries,
#     config, new secrets, `systemctl enable --now` of the portal and the
#     backup timer; then deploy/install.sh node --no-start with those
#     secrets, and `systemctl start cloche-proxy`;
#   - the first admin key with the command install.sh prints;
#   - the portal and the proxy run as their users with the unit's
#     restrictions (no capabilities / only CAP_NET_BIND_SERVICE, no new
#     privileges, a seccomp filter), the backup service makes a copy, both
#     stop with status 0 on `systemctl stop` and logged no error.
# The node agent needs the real pool, runsc, netns and cgroups, which a
# container hides, so it runs beside the container (in this test's own
# mount namespace, where /etc and /usr/local are the container's) with
# exactly its unit's ExecStart line and the written node.conf; its connect
# socket directory is shared with the container, where the unprivileged
# proxy uses it through the group `cloche`.  A sandbox is acquired through
# the portal and answers through the proxy with its token.
# Uses the pool, runsc and the fixed ports of the configs (7000, 7070,
# 7081, 80): run it under the pool lock
#   flock /tmp/cloche-pool.lock bash tests/integration/test-deploy-systemd.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# Everything below runs in a mount namespace of its own; / is private on
# this machine, so its mounts stay here, and /run/netns (shared) still
# carries the node agent's netns mounts out.
if [[ -z ${CLOCHE_DEPLOY_NS:-} ]]; then
	CLOCHE_DEPLOY_NS=1 exec unshare -m --propagation unchanged bash "$0" "$@"
fi
. tests/lib/tap.sh
. tests/lib/sandbox.sh

BUILD=${BUILD:-build}
[[ $(id -u) == 0 ]] || { not_ok "run as root"; tap_exit; }
command -v systemd-nspawn >/dev/null || { not_ok "systemd-nspawn is installed (systemd-container; scripts/install-deps.sh)"; tap_exit; }
for b in cloche-portal cloche-node cloche-proxy cloche; do
	[[ -x $BUILD/bin/$b ]] || { not_ok "$BUILD/bin/$b is built"; tap_exit; }
done
[[ -n "$(sb_latest_template desktop)" ]] || { not_ok "a desktop template exists (make template)"; tap_exit; }
for p in 7000 7070 7081 80; do
	! ss -Htln "sport = :$p" | grep -q . || { not_ok "port $p is free (the configs' ports)"; tap_exit; }
done

W=$(mktemp -d)
M=$W/root # the container's root
nspawn_pid= node_pid= L=
cin() { nsenter -t "$L" -a -- "$@"; } # a command in the container
node_api() {
	curl -s -m 60 -X "$1" -H "Authorization: Bearer $(cat "$M/etc/cloche/credentials/node.cred")" "http://127.0.0.1:7070$2"
}
cleanup() {
	local i left id
	if [[ -n $node_pid ]]; then
		for ((i = 0; i < 60; i++)); do
			left=$(node_api GET /v1/sandboxes | jq -r '.sandboxes[]?.id' 2>/dev/null)
			[[ -n $left ]] || break
			for id in $left; do node_api DELETE "/v1/sandboxes/$id" >/dev/null; done
			sleep 1
		done
		kill -TERM "$node_pid" 2>/dev/null
		wait "$node_pid" 2>/dev/null
	fi
	if [[ -n $nspawn_pid ]]; then
		kill -TERM "$nspawn_pid" 2>/dev/null # the container shuts down
		wait_for 20 exited "$nspawn_pid"
		kill -9 "$nspawn_pid" 2>/dev/null
		wait "$nspawn_pid" 2>/dev/null
	fi
	umount -R "$M" 2>/dev/null
	umount "$W/t" 2>/dev/null
	rm -rf --one-file-system "$W"
}
trap cleanup EXIT

# --- the container ------------------------------------------------------------------
mkdir -p "$W/t" "$M" "$W/run-cloche"
mount -t tmpfs -o size=2g tmpfs "$W/t" && mkdir "$W/t/upper" "$W/t/work" &&
	mount -t overlay overlay -o "lowerdir=/,upperdir=$W/t/upper,workdir=$W/t/work" "$M"
check "an overlay of this machine's root for the container" mountpoint -q "$M"
# The node agent's runtime directory (RuntimeDirectory=cloche, 0755), shared.
chmod 0755 "$W/run-cloche"
# The checkout at its own path: the container's /tmp is its own (a CI
# checkout may be there).
systemd-nspawn -q -D "$M" -M "cloche-t$$" --hostname="$(hostname)" --register=no --keep-unit --bind="$W/run-cloche:/run/cloche" \
	--bind-ro="$PWD" \
	-b -- --unit=basic.target >"$W/container.log" 2>&1 &
nspawn_pid=$!
for ((i = 0; i < 100; i++)); do
	L=$(pgrep -P "$nspawn_pid" -x systemd) && break
	sleep 0.1
done
# systemctl answers once the manager's bus is up; then wait for the boot.
state=
for ((i = 0; i < 100; i++)); do
	[[ -n $L ]] && state=$(cin systemctl is-system-running --wait 2>/dev/null) && break
	[[ $state == degraded ]] && break
	sleep 0.1
done
check "systemd boots in the container ($state)" test -n "$L" -a "$(cin ps -p 1 -o comm=)" = systemd
[[ -n $L ]] || { sed 's/^/# /' "$W/container.log" | tail -n 5; tap_exit; }

# --- the portal, as an operator installs it -------------------------------------------
out=$(cin bash -c "cd '$PWD' && deploy/install.sh portal --no-build --domain cloche.localhost --allowed-hosts 127.0.0.1" 2>&1)
check "install.sh portal installs and starts it under systemd" \
	bash -c '[[ $(nsenter -t "$1" -a -- systemctl is-active cloche-portal cloche-portal-backup.timer | sort -u) == active ]]' _ "$L"
sed 's/^/# /' <<<"$out" | tail -n 4
wait_for 10 curl -sf -o /dev/null http://127.0.0.1:7000/healthz
ADMIN=$(cin runuser -u cloche-portal -- cloche-portal --db /var/lib/cloche-portal/portal.db key-create admin admin)
check "the first admin key, as install.sh says to make it, works" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN" http://127.0.0.1:7000/sbv1/nodes)" = 200
check "the database is the portal's own (/var/lib/cloche-portal, 0700)" \
	bash -c '[[ $(nsenter -t "$1" -a -- stat -c "%U %a" /var/lib/cloche-portal) == "cloche-portal 700" ]]' _ "$L"

# --- a node on the same machine -----------------------------------------------------------
out=$(cin bash -c "cd '$PWD' && deploy/install.sh node --no-build --no-start --portal-url http://127.0.0.1:7000 \
	--advertise 127.0.0.1 --domain cloche.localhost --warm 0 --node-credential /etc/cloche/credentials/node.cred \
	--token-key /etc/cloche/credentials/token.key" 2>&1)
check "install.sh node (the portal's secrets kept, node.conf and proxy.conf written)" \
	bash -c 'grep -q "kept /etc/cloche/credentials/node.cred" <<<"$1" && grep -q "wrote /etc/cloche/proxy.conf" <<<"$1"' _ "$out"
# The agent: its unit's command line, run here with the container's /etc
# and /usr/local.
mount --bind "$M/etc" /etc && mount --bind "$M/usr/local" /usr/local && mount --bind "$W/run-cloche" /run/cloche
line=$(sed -n 's/^ExecStart=//p' deploy/systemd/cloche-node.service)
read -ra cmd <<<"$line"
"${cmd[@]}" >>"$W/node.log" 2>&1 &
node_pid=$!
wait_for 10 curl -s -o /dev/null http://127.0.0.1:7070/healthz
check "the node agent runs as its unit says ($line)" curl -sf -o /dev/null http://127.0.0.1:7070/healthz
check "... and its connect socket is root:cloche 0660" \
	bash -c '[[ $(stat -c "%U:%G %a" "$1/node.sock") == "root:cloche 660" ]]' _ "$W/run-cloche"
cin systemctl start cloche-proxy
check "systemctl start cloche-proxy" test "$(cin systemctl is-active cloche-proxy)" = active
nodes() { curl -s -H "Authorization: Bearer $ADMIN" http://127.0.0.1:7000/sbv1/nodes; }
for ((i = 0; i < 100; i++)); do [[ $(nodes | jq '[.nodes[] | select(.state == "up")] | length') == 1 ]] && break; sleep 0.1; done
check "the node registers with the portal" test "$(nodes | jq '[.nodes[] | select(.state == "up")] | length')" = 1

# --- what the units' restrictions look like from inside -------------------------------------
# status_of UNIT FIELD: a field of /proc/<main pid>/status.
status_of() {
	local pid
	pid=$(cin systemctl show -p MainPID --value "$1")
	cin awk -v f="$2:" '$1 == f { print $2 }' "/proc/$pid/status"
}
uid() { cin id -u "$1"; }
check "the portal runs as cloche-portal, no capabilities, no new privileges, a seccomp filter" \
	test "$(status_of cloche-portal Uid)" = "$(uid cloche-portal)" -a "$(status_of cloche-portal CapEff)" = 0000000000000000 \
	-a "$(status_of cloche-portal NoNewPrivs)" = 1 -a "$(status_of cloche-portal Seccomp)" = 2
check "the proxy runs as cloche-proxy with CAP_NET_BIND_SERVICE alone, no new privileges, a seccomp filter" \
	test "$(status_of cloche-proxy Uid)" = "$(uid cloche-proxy)" -a "$(status_of cloche-proxy CapEff)" = 0000000000000400 \
	-a "$(status_of cloche-proxy NoNewPrivs)" = 1 -a "$(status_of cloche-proxy Seccomp)" = 2
for u in cloche-portal cloche-proxy; do
	echo "# systemd-analyze security $u: $(cin systemd-analyze security --no-pager "$u.service" 2>/dev/null | tail -n 1)"
done

# --- a sandbox through them all ------------------------------------------------------------------
r=$(curl -s -m 200 -H "Authorization: Bearer $ADMIN" -d '{"ttl":300,"wait":180}' http://127.0.0.1:7000/sbv1/acquire)
id=$(jq -r .id <<<"$r") tok=$(jq -r .token <<<"$r")
check "a sandbox is acquired from the portal ($(jq -r '.state // .error.message' <<<"$r"))" test "$(jq -r .state <<<"$r")" = ready
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "http://8080-$id.cloche.localhost/health")
check "... and answers through the proxy on port 80 with its token ($code)" test "$code" = 200
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' "http://8080-$id.cloche.localhost/health")
check "... not without it ($code)" test "$code" = 401

# What the daemons themselves take, and the sandbox's own disk (capacity
# planning: docs/operations.md).
nid=$(jq -r .node_sandbox_id <<<"$r")
echo "# disk of the sandbox's rootfs (btrfs filesystem du: total, exclusive, shared):" \
	$(btrfs filesystem du -s --raw "$CLOCHE_POOL/sandboxes/$nid/rootfs" 2>/dev/null | tail -n 1 | awk '{ print $1, $2, $3 }')
echo "# resident memory with one sandbox: portal $(status_of cloche-portal VmRSS) kB," \
	"proxy $(status_of cloche-proxy VmRSS) kB, node agent $(awk '$1 == "VmRSS:" { print $2 }' "/proc/$node_pid/status") kB"

# --- backup, stop ------------------------------------------------------------------------------------
cin systemctl start cloche-portal-backup.service
check "the backup service makes a copy the portal's user owns" \
	bash -c '[[ $(nsenter -t "$1" -a -- bash -c "stat -c \"%U %a\" /var/backups/cloche/portal-*.db") == "cloche-portal 600" ]]' _ "$L"
curl -s -H "Authorization: Bearer $ADMIN" -X POST "http://127.0.0.1:7000/sbv1/sandboxes/$id/release" >/dev/null
check "the sandbox is released; the node holds nothing" \
	bash -c 'for ((i = 0; i < 300; i++)); do [[ $(curl -s -H "Authorization: Bearer $1" http://127.0.0.1:7070/v1/sandboxes | jq ".sandboxes | length") == 0 ]] && exit 0; sleep 0.1; done; exit 1' \
	_ "$(cat "$M/etc/cloche/credentials/node.cred")"
cin systemctl stop cloche-proxy cloche-portal
for u in cloche-portal cloche-proxy; do
	check "systemctl stop $u: status 0" \
		test "$(cin systemctl show -p Result --value "$u")/$(cin systemctl show -p ExecMainStatus --value "$u")" = success/0
	check "... and $u logged JSON lines, none at level error" \
		bash -c 'out=$(nsenter -t "$1" -a -- journalctl -q -u "$2" -o cat); grep -q "^{" <<<"$out" && ! grep -q "\"level\":\"error\"" <<<"$out"' _ "$L" "$u"
done
kill -TERM "$node_pid"
wait "$node_pid"
rc=$?
node_pid=
check "the node agent stops on SIGTERM with status 0" test "$rc" = 0
check "... and logged no error" bash -c '! grep -q "\"level\":\"error\"" "$1"' _ "$W/node.log"
tap_exit
