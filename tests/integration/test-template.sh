#!/bin/bash
# tests/integration/test-template.sh: the template build (rootfs/build-template.sh)
# and the pool library (scripts/lib/pool.sh) against a real btrfs loop image.
# Run from the repository root as root after `make all`.
#
# Everything happens in a throwaway pool (a 20G sparse image in a temp dir)
# that is unmounted and deleted at the end; the real pool is only read.  The
# base layer takes minutes to make with mmdebstrap, so when the real pool
# (CLOCHE_REAL_POOL, default /var/lib/cloche) already holds the base with the
# digest this checkout would build, it is copied over with btrfs send/receive
# (seconds); otherwise the test builds it.  The top layer is built for real
# each time, several times: it takes about a second.
#
# Prints `ok - ...` / `not ok - ...` per check; exits non-zero on any failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
REPO="$PWD"
BUILD="$REPO/rootfs/build-template.sh"
BIN_DIR="${CLOCHE_BIN_DIR:-$REPO/build/bin}"
REAL_POOL="${CLOCHE_REAL_POOL:-/var/lib/cloche}"
# shellcheck source=tests/lib/tap.sh
. "$REPO/tests/lib/tap.sh"
bail() {
	not_ok "$*"
	exit 1
}

[[ "$(id -u)" == 0 ]] || bail "template test needs root"
[[ -x "$BIN_DIR/cloche-init" ]] || bail "no $BIN_DIR/cloche-init: run make all first"

WORK="$(mktemp -d /tmp/cloche-test-template.XXXXXX)"
export CLOCHE_POOL="$WORK/pool"
export CLOCHE_POOL_IMG="$WORK/img/pool.img"
export CLOCHE_POOL_SIZE=20G
# The tree is shared with builds running meanwhile: freeze the inputs of the
# top layer, or its digest could change between two runs of this test.
mkdir -p "$WORK/bin" "$WORK/lib" "$WORK/overlay"
cp -p "$BIN_DIR"/cloche-* "$WORK/bin/"
cp -p "$(dirname "$BIN_DIR")/lib/libcloche-compat.so" "$WORK/lib/"
[[ ! -d "$REPO/appliance/rootfs-overlay" ]] || cp -a "$REPO/appliance/rootfs-overlay/." "$WORK/overlay/"
BIN_DIR="$WORK/bin"
export CLOCHE_BIN_DIR="$BIN_DIR" CLOCHE_ROOTFS_OVERLAY="$WORK/overlay"
unset CLOCHE_TEMPLATE_FAIL_AT CLOCHE_TEMPLATE_STALL_AT CLOCHE_TEMPLATE_KEEP
# shellcheck source=scripts/lib/pool.sh
. "$REPO/scripts/lib/pool.sh"

bg_pid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	[[ -z "$bg_pid" ]] || kill "$bg_pid" 2>/dev/null || true
	if mountpoint -q "$CLOCHE_POOL" 2>/dev/null; then
		local sv
		# Subvolumes go with the image; unmount, then remove everything.
		for sv in "$CLOCHE_POOL"/sandboxes/*/rootfs; do
			if [[ -d "$sv" ]]; then btrfs subvolume delete "$sv" >/dev/null 2>&1 || true; fi
		done
		pool_umount || umount -l "$CLOCHE_POOL" || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

T="$CLOCHE_POOL/templates"
has_tmp() { compgen -G "$T/.tmp-*" >/dev/null; }
no_tmp_left() { ! has_tmp; }
is_ro() { [[ "$(btrfs property get -ts "$1" ro 2>/dev/null)" == ro=true ]]; }

# --- pool ------------------------------------------------------------------
pool_ensure || bail "pool_ensure on a fresh loop image"
pool_ensure || bail "pool_ensure a second time"
check "pool: loop image created sparse and mounted as btrfs" \
	pool_is_btrfs "$CLOCHE_POOL"
check "pool: mounted once after two pool_ensure calls" \
	test "$(findmnt -rn -o TARGET | grep -cxF "$CLOCHE_POOL")" = 1
check "pool: templates/ sandboxes/ checkpoints/ exist" \
	test -d "$T" -a -d "$CLOCHE_POOL/sandboxes" -a -d "$CLOCHE_POOL/checkpoints"
free="$(pool_free_bytes)"
check "pool: pool_free_bytes says $((free / 1000000000)) GB free" \
	test "$free" -gt 10000000000
check "pool: image is sparse (uses under 1 GB of disk)" \
	test "$(stat -c %b "$CLOCHE_POOL_IMG")" -lt 2000000

# --- first build -----------------------------------------------------------
digest="$("$BUILD" --print-digest)"
base_digest="$("$BUILD" --print-base-digest)"
real_base="$REAL_POOL/templates/desktop-base@$base_digest"
if [[ "$(btrfs property get -ts "$real_base" ro 2>/dev/null)" == ro=true ]]; then
	start=$SECONDS
	if btrfs send -q "$real_base" 2>/dev/null | btrfs receive -q "$T/" 2>/dev/null; then
		ok "seeded desktop-base@$base_digest from $REAL_POOL in $((SECONDS - start)) s"
	else
		btrfs subvolume delete "$T/desktop-base@$base_digest" >/dev/null 2>&1 || true
		echo "# could not copy the base from $REAL_POOL; building it"
	fi
else
	echo "# desktop-base@$base_digest is not in $REAL_POOL: building it here (about two minutes)"
fi

start=$SECONDS
if out="$("$BUILD" 2>"$WORK/build1.err")"; then
	ok "build: exit 0 in $((SECONDS - start)) s"
else
	sed 's/^/# /' "$WORK/build1.err"
	bail "build: failed"
fi
path="$(tail -n 1 <<<"$out")"
F="$T/desktop@$digest"
[[ "$path" == "$F" ]] || bail "build: last line of stdout is $path, expected $F"
ok "build: last line of stdout is the template path ($path)"
only_progress() { ! grep -qv '^template: ' "$1"; }
check "build: progress lines on stderr start with template:" only_progress "$WORK/build1.err"
check "template: is read-only" is_ro "$F"
check "template: base layer is read-only" is_ro "$T/desktop-base@$base_digest"
check "template: /opt/cloche/bin/cloche-init is executable" test -x "$F/opt/cloche/bin/cloche-init"
check "template: /etc/ld.so.preload names the compat library, which is there" \
	bash -c '[[ $(cat "$1/etc/ld.so.preload") == /opt/cloche/lib/libcloche-compat.so ]] &&
		cmp -s "$1/opt/cloche/lib/libcloche-compat.so" "$2/lib/libcloche-compat.so"' _ "$F" "$WORK"
for b in "$BIN_DIR"/cloche-* "$BIN_DIR"/mcp-*; do
	[[ -x "$b" ]] || continue
	case $(basename "$b") in
	cloche-node | cloche-portal | cloche-proxy)
		# Host-side daemons have no business inside a sandbox.
		check "template: has no $(basename "$b") (host only)" test ! -e "$F/opt/cloche/bin/$(basename "$b")"
		;;
	*)
		check "template: has $(basename "$b"), same bytes as the build" \
			cmp -s "$b" "$F/opt/cloche/bin/$(basename "$b")"
		;;
	esac
done
check "template: has chromium" test -x "$F/usr/bin/chromium" -a -x "$F/usr/lib/chromium/chromium"
check "template: has Xvfb" test -x "$F/usr/bin/Xvfb"
check "template: has noVNC's files" test -f "$F/usr/share/novnc/vnc.html" -a -f "$F/usr/share/novnc/core/rfb.js"
check "template: user agent is uid/gid 1000 with home /home/agent" \
	grep -qx 'agent:x:1000:1000:[^:]*:/home/agent:/bin/bash' "$F/etc/passwd"
check "template: /home/agent belongs to agent" test "$(stat -c %u:%g "$F/home/agent")" = 1000:1000
check "template: /tmp /dev/shm /run exist (tmpfs mount points)" \
	test -d "$F/tmp" -a -d "$F/dev/shm" -a -d "$F/run"
check "template: /etc/hosts has localhost" grep -qE '^127\.0\.0\.1[[:space:]]+localhost' "$F/etc/hosts"
check "template: machine-id is set" grep -qxE '[0-9a-f]{32}' "$F/etc/machine-id"
check "template: Chromium policy is valid JSON" \
	jq -e '.DefaultBrowserSettingEnabled == false' "$F/etc/chromium/policies/managed/cloche.json" >/dev/null
check "template: /opt/cloche/TEMPLATE names desktop@$digest" \
	grep -qx "template=desktop@$digest" "$F/opt/cloche/TEMPLATE"
while IFS= read -r rel; do
	check "template: overlay file /$rel copied" cmp -s "$WORK/overlay/$rel" "$F/$rel"
done < <(cd "$WORK/overlay" && find . -type f -printf '%P\n' | sort)
missing="$(for b in "$F"/opt/cloche/bin/*; do
	chroot "$F" /usr/bin/ldd "/opt/cloche/bin/$(basename "$b")" 2>/dev/null | grep 'not found' || true
done)"
check "template: every library our binaries link is present${missing:+ (missing: $missing)}" test -z "$missing"
check "template: apt lists and man pages are cleaned out" \
	test -z "$(ls -A "$F/var/lib/apt/lists" 2>/dev/null)" -a -z "$(ls -A "$F/usr/share/man" 2>/dev/null)"
check "build: no .tmp-* left" no_tmp_left

# --- reuse -----------------------------------------------------------------
start_ns=$(date +%s%N)
out2="$("$BUILD" 2>"$WORK/build2.err")" || true
ms=$((($(date +%s%N) - start_ns) / 1000000))
check "second run: same path ($(tail -n 1 <<<"$out2"))" test "$(tail -n 1 <<<"$out2")" = "$F"
check "second run: says it reuses" grep -qx "template: reusing desktop@$digest" "$WORK/build2.err"
check "second run: fast (${ms} ms)" test "$ms" -lt 5000

# --- failure and interruption leave nothing half-made ----------------------
uuid_before="$(btrfs subvolume show "$F" | awk '$1 == "UUID:" { print $2 }')"
if CLOCHE_TEMPLATE_FAIL_AT=final "$BUILD" --force >/dev/null 2>"$WORK/fail.err"; then
	not_ok "forced failure: build should have failed"
else
	ok "forced failure in the top layer: exit non-zero"
fi
check "forced failure: it failed where asked" grep -q 'failing at the final layer' "$WORK/fail.err"
check "forced failure: no .tmp-* left" no_tmp_left
check "forced failure: the existing template is untouched" \
	test "$(btrfs subvolume show "$F" | awk '$1 == "UUID:" { print $2 }')" = "$uuid_before"

CLOCHE_TEMPLATE_STALL_AT=final "$BUILD" --force >/dev/null 2>"$WORK/stall.err" &
bg_pid=$!
for _ in $(seq 1 600); do
	grep -q stalling "$WORK/stall.err" && break
	kill -0 "$bg_pid" 2>/dev/null || break
	sleep 0.1
done
check "SIGTERM: the build is midway (a .tmp-* exists)" has_tmp
kill -TERM "$bg_pid"
rc=0
wait "$bg_pid" || rc=$?
bg_pid=""
check "SIGTERM: build exits 143 (got $rc)" test "$rc" = 143
check "SIGTERM: no .tmp-* left" no_tmp_left
check "SIGTERM: the existing template is untouched" \
	test "$(btrfs subvolume show "$F" | awk '$1 == "UUID:" { print $2 }')" = "$uuid_before"

# Interrupting mmdebstrap itself (it mounts /proc, /sys and /dev inside the
# chroot) costs a base build's worth of time: only with CLOCHE_TEST_SLOW=1.
if [[ "${CLOCHE_TEST_SLOW:-0}" == 1 ]]; then
	base_uuid="$(btrfs subvolume show "$T/desktop-base@$base_digest" | awk '$1 == "UUID:" { print $2 }')"
	"$BUILD" --force-base >/dev/null 2>"$WORK/stall-base.err" &
	bg_pid=$!
	sleep 25
	check "SIGTERM in mmdebstrap: the base build is midway" has_tmp
	kill -TERM "$bg_pid"
	rc=0
	wait "$bg_pid" || rc=$?
	bg_pid=""
	check "SIGTERM in mmdebstrap: exits 143 (got $rc)" test "$rc" = 143
	check "SIGTERM in mmdebstrap: no .tmp-* left" no_tmp_left
	check "SIGTERM in mmdebstrap: nothing left mounted in the pool" \
		test -z "$(findmnt -rn -o TARGET | grep -F "$T/" || true)"
	check "SIGTERM in mmdebstrap: the existing base is untouched" \
		test "$(btrfs subvolume show "$T/desktop-base@$base_digest" | awk '$1 == "UUID:" { print $2 }')" = "$base_uuid"
fi

# A crash (kill -9) leaves a .tmp-*; the next run removes it.
btrfs subvolume create "$T/.tmp-desktop-crashed0" >/dev/null
"$BUILD" >/dev/null 2>"$WORK/stale.err" || true
check "stale .tmp-* from a crash is removed by the next run" no_tmp_left

# --- sandboxes snapshot it -------------------------------------------------
mkdir -p "$CLOCHE_POOL/sandboxes/t1"
btrfs subvolume snapshot "$F" "$CLOCHE_POOL/sandboxes/t1/rootfs" >/dev/null
writable() { echo hi >"$1/home/agent/probe" && ! is_ro "$1"; }
check "snapshot: writable" writable "$CLOCHE_POOL/sandboxes/t1/rootfs"
check "snapshot: the template does not see the write" test ! -e "$F/home/agent/probe"

# --- pruning ---------------------------------------------------------------
# New digests by adding a dummy program; keep only one template per name.
variant() { # N: builds with an extra dummy binary, prints the path
	local dir="$WORK/bin$1"
	mkdir -p "$dir"
	cp -p "$BIN_DIR"/cloche-* "$dir/"
	printf '#!/bin/sh\necho variant %s\n' "$1" >"$dir/cloche-zz-dummy"
	chmod 0755 "$dir/cloche-zz-dummy"
	CLOCHE_BIN_DIR="$dir" CLOCHE_TEMPLATE_KEEP=1 "$BUILD" 2>>"$WORK/prune.err" | tail -n 1
}
F2="$(variant 2)"
check "prune: a template a sandbox was snapshotted from is kept" test -d "$F"
check "prune: ... and the build says why" grep -q "keeping old desktop@$digest: still in use" "$WORK/prune.err"
btrfs subvolume delete "$CLOCHE_POOL/sandboxes/t1/rootfs" >/dev/null
F3="$(variant 3)"
check "prune: unused older templates are deleted once over the limit" \
	test ! -e "$F" -a ! -e "$F2" -a -d "$F3"
check "prune: the base under the kept template stays" is_ro "$T/desktop-base@$base_digest"

echo "# $(grep -h '^template: built' "$WORK"/build1.err || true)"
tap_exit
