#!/bin/bash
# rootfs/build-template.sh: builds the `desktop` template, the read-only btrfs
# subvolume every sandbox's rootfs is a snapshot of, and prints its path as
# the last line of stdout (progress goes to stderr).  Two layers, each named
# by a digest of what went into it, so a code change rebuilds only the thin
# top layer:
#
#   templates/desktop-base@<digest>  Debian + Chromium + Xvfb + noVNC files
#                                    (rootfs/desktop-base.sh, desktop.packages,
#                                    base-overlay/); minutes, rarely rebuilt
#   templates/desktop@<digest>       snapshot of the base + our binaries in
#                                    /opt/cloche/bin + appliance/rootfs-overlay/;
#                                    seconds
#
# Each layer is built under templates/.tmp-*, made read-only, and only then
# renamed to its final name, so a name that exists is always complete.  A
# failure, SIGINT or SIGTERM removes the unfinished layer; a crash leaves a
# .tmp-* that the next run removes.  See docs/template.md.
#
# Environment: CLOCHE_POOL, CLOCHE_POOL_IMG, CLOCHE_POOL_SIZE (scripts/lib/
# pool.sh); CLOCHE_BIN_DIR (default build/bin); CLOCHE_ROOTFS_OVERLAY (default
# appliance/rootfs-overlay); CLOCHE_TEMPLATE_KEEP (how many of each name to
# keep, default 3); CLOCHE_APT_SOURCES (desktop-base.sh).
# For tests: CLOCHE_TEMPLATE_FAIL_AT=base|final fails that layer just before
# it would be sealed, CLOCHE_TEMPLATE_STALL_AT=base|final waits there instead
# (for an interrupt to arrive).
set -euo pipefail

ROOTFS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$ROOTFS_DIR/.." && pwd)"
NAME=desktop
BIN_DIR="${CLOCHE_BIN_DIR:-$REPO/build/bin}"
# The compatibility library preloaded into every process of the sandbox
# (appliance/compat/xattr.c, docs/sandbox.md).
COMPAT_LIB="${CLOCHE_COMPAT_LIB:-$(dirname "$BIN_DIR")/lib/libcloche-compat.so}"
APPLIANCE_OVERLAY="${CLOCHE_ROOTFS_OVERLAY:-$REPO/appliance/rootfs-overlay}"
KEEP="${CLOCHE_TEMPLATE_KEEP:-3}"

# shellcheck source=scripts/lib/pool.sh
. "$REPO/scripts/lib/pool.sh"

usage() {
	cat <<-EOF
		usage: rootfs/build-template.sh [--force | --force-base] [--print-digest | --print-base-digest]

		Builds the $NAME template into \$CLOCHE_POOL/templates/$NAME@<digest>
		(read-only btrfs subvolume) and prints its path as the last line.
		An existing template with the same digest is reused.

		  --force              rebuild the top layer even if it exists
		  --force-base         rebuild both layers (picks up Debian updates)
		  --print-digest       print the digest that would be built, and exit
		  --print-base-digest  the same for the base layer
		  --help               this text

		A forced rebuild replaces the subvolume of the same name; the new one
		has a new UUID, so checkpoint deltas made against the old one no
		longer apply to it.
	EOF
}

log() {
	printf 'template: %s\n' "$*" >&2
}

die() {
	log "$*"
	exit 1
}

# --- digests ---------------------------------------------------------------

# describe LABEL PATH: one line per file, directory and symlink under PATH
# (or for the file PATH), in a stable order: name, type, executable bit and
# content hash.  Owners, times and other mode bits are not part of it: the
# copy steps set them the same way on every machine.
describe() {
	local label="$1" path="$2" rel full
	if [[ -f "$path" && ! -L "$path" ]]; then
		printf 'F %s %s %s\n' "$label" "$([[ -x "$path" ]] && echo x || echo -)" \
			"$(sha256sum <"$path" | cut -d' ' -f1)"
		return
	fi
	[[ -d "$path" ]] || return 0
	while IFS= read -r -d '' rel; do
		full="$path/$rel"
		if [[ -L "$full" ]]; then
			printf 'L %s/%s %s\n' "$label" "$rel" "$(readlink "$full")"
		elif [[ -d "$full" ]]; then
			printf 'D %s/%s\n' "$label" "$rel"
		elif [[ -f "$full" ]]; then
			printf 'F %s/%s %s %s\n' "$label" "$rel" \
				"$([[ -x "$full" ]] && echo x || echo -)" \
				"$(sha256sum <"$full" | cut -d' ' -f1)"
		fi
	done < <(find "$path" -mindepth 1 \( -type d -o -type f -o -type l \) -printf '%P\0' | LC_ALL=C sort -z)
}

digest_of() {
	sha256sum | cut -c1-12
}

# The binaries that go into /opt/cloche/bin: our programs (cloche-*) and the
# MCP servers (mcp-*), executables only, minus the host-side daemons that
# have no business inside a sandbox.  One path per line, sorted.
HOST_ONLY_BINS=(cloche-node cloche-portal cloche-proxy)
list_bins() {
	local f h
	for f in "$BIN_DIR"/cloche-* "$BIN_DIR"/mcp-*; do
		for h in "${HOST_ONLY_BINS[@]}"; do
			[[ "$(basename "$f")" == "$h" ]] && continue 2
		done
		[[ -f "$f" && -x "$f" ]] && printf '%s\n' "$f"
	done | LC_ALL=C sort
}

base_digest() {
	{
		printf 'cloche template base 1\n'
		describe desktop.packages "$ROOTFS_DIR/desktop.packages"
		describe desktop-base.sh "$ROOTFS_DIR/desktop-base.sh"
		describe base-overlay "$ROOTFS_DIR/base-overlay"
	} | digest_of
}

final_digest() {
	local base="$1" b
	{
		printf 'cloche template %s 1 base %s\n' "$NAME" "$base"
		describe build-template.sh "$ROOTFS_DIR/build-template.sh"
		while IFS= read -r b; do
			describe "bin/$(basename "$b")" "$b"
		done < <(list_bins)
		describe lib/libcloche-compat.so "$COMPAT_LIB"
		describe rootfs-overlay "$APPLIANCE_OVERLAY"
	} | digest_of
}

# --- subvolumes ------------------------------------------------------------

TMPS=()  # unfinished subvolumes this run made; removed on failure
CHILD="" # long-running child (mmdebstrap, stall), killed on interrupt

is_subvolume() {
	btrfs subvolume show "$1" >/dev/null 2>&1
}

# A template is usable when its name exists, it is a subvolume, and it is
# read-only (the flag is set before the rename, so anything else is foreign).
is_ready() {
	is_subvolume "$1" && [[ "$(btrfs property get -ts "$1" ro 2>/dev/null)" == ro=true ]]
}

# remove_subvol PATH: unmount whatever an interrupted mmdebstrap left mounted
# inside, then delete the subvolume (or directory).
remove_subvol() {
	local path="$1" m
	[[ -e "$path" ]] || return 0
	while IFS= read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(findmnt -rn -o TARGET | grep -F "$path/" | LC_ALL=C sort -r)
	if is_subvolume "$path"; then
		btrfs property set -ts "$path" ro false 2>/dev/null || true
		btrfs subvolume delete "$path" >/dev/null
	else
		rm -rf "$path"
	fi
}

new_tmp_path() {
	printf '%s/.tmp-%s-%s\n' "$TPL" "$1" "$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
}

forget_tmp() {
	local keep=() t
	for t in "${TMPS[@]}"; do
		[[ "$t" == "$1" ]] || keep+=("$t")
	done
	TMPS=("${keep[@]}")
}

# seal TMP DEST: make TMP durable and read-only, then give it its name.  A
# DEST that exists (--force, or a writable leftover) is replaced.
seal() {
	local tmp="$1" dest="$2"
	btrfs filesystem sync "$tmp" >/dev/null
	btrfs property set -ts "$tmp" ro true
	if [[ -e "$dest" ]]; then
		remove_subvol "$dest" || die "cannot delete the old $(basename "$dest")"
	fi
	mv -T "$tmp" "$dest"
	forget_tmp "$tmp"
}

# run_child CMD...: run CMD in its own process group and wait, so that an
# interrupt can stop it and everything it started.
run_child() {
	local rc=0
	setsid "$@" {lock_fd}>&- &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=""
	return "$rc"
}

fault_point() {
	if [[ "${CLOCHE_TEMPLATE_FAIL_AT:-}" == "$1" ]]; then
		die "failing at the $1 layer (CLOCHE_TEMPLATE_FAIL_AT=$1)"
	fi
	if [[ "${CLOCHE_TEMPLATE_STALL_AT:-}" == "$1" ]]; then
		log "stalling at the $1 layer (CLOCHE_TEMPLATE_STALL_AT=$1)"
		run_child sleep 3600
	fi
}

cleanup() {
	if [[ -n "$CHILD" ]]; then
		kill -TERM -- "-$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
		kill -KILL -- "-$CHILD" 2>/dev/null || true
		CHILD=""
	fi
	local t
	for t in "${TMPS[@]}"; do
		if remove_subvol "$t"; then
			log "removed unfinished $(basename "$t")"
		else
			log "could not remove $t; the next build will"
		fi
	done
	TMPS=()
}

on_exit() {
	local rc=$?
	((rc == 0)) || cleanup
}

on_signal() {
	log "interrupted (SIG$1)"
	trap '' INT TERM HUP
	cleanup
	trap - EXIT "$1"
	kill -s "$1" "$$"
}

# --- layers ----------------------------------------------------------------

build_base() {
	local dest="$1" tmp logfile
	tmp="$(new_tmp_path base)"
	TMPS+=("$tmp")
	btrfs subvolume create "$tmp" >/dev/null
	log "[1/3] base rootfs with mmdebstrap (one to three minutes)"
	logfile="$(mktemp "${TMPDIR:-/tmp}/cloche-template-base.XXXXXX")"
	if ! CLOCHE_BASE_LOG="$logfile" run_child "$ROOTFS_DIR/desktop-base.sh" build "$tmp"; then
		tail -n 25 "$logfile" | sed 's/^/template:   | /' >&2
		die "base layer failed; full log in $logfile"
	fi
	rm -f "$logfile"
	fault_point base
	seal "$tmp" "$dest"
}

# copy_tree SRC DEST: SRC's files into DEST at the same relative paths, owned
# by root, modes from the executable bit, existing directories left as they are.
copy_tree() {
	tar -C "$1" -c --owner=0 --group=0 --numeric-owner --mode='u+w,go-w,a+rX' . |
		tar -C "$2" -x --no-overwrite-dir
}

# Every library our binaries link must be in the base: fail here, with the
# fix, rather than in a sandbox at start.
# The accounts of the services people and the node rely on (docs/security.md):
# each its own uid, so the agent (uid 1000) can neither signal, ptrace nor
# replace them.  name:uid:home:extra-group; homes are 0700 and theirs.
# cloche-desk is also in the agent's group, to append to the action trace.
SERVICE_USERS=(
	"cloche-x:901:/var/lib/cloche/home/x:"
	"cloche-vnc:902:/var/lib/cloche/home/vnc:"
	"cloche-desk:903:/var/lib/cloche/home/desk:agent"
	"cloche-rec:904:/var/lib/cloche/rec:"
)

add_service_users() {
	local root="$1" entry name uid home extra
	for entry in "${SERVICE_USERS[@]}"; do
		IFS=: read -r name uid home extra <<<"$entry"
		if ! grep -q "^$name:" "$root/etc/passwd"; then
			awk -F: -v u="$uid" '$3 == u { bad = 1 } END { exit bad }' \
				"$root/etc/passwd" "$root/etc/group" || die "uid/gid $uid already taken"
			printf '%s:x:%d:%d:cloche %s service:%s:/usr/sbin/nologin\n' \
				"$name" "$uid" "$uid" "$name" "$home" >>"$root/etc/passwd"
			printf '%s:x:%d:\n' "$name" "$uid" >>"$root/etc/group"
			printf '%s:!:%d:0:99999:7:::\n' "$name" "$(($(date +%s) / 86400))" >>"$root/etc/shadow"
			[[ ! -e "$root/etc/gshadow" ]] || printf '%s:!::\n' "$name" >>"$root/etc/gshadow"
		fi
		if [[ -n "$extra" ]]; then
			# Append name to the member list of group extra.
			awk -F: -v g="$extra" -v m="$name" 'BEGIN { OFS = ":" }
				$1 == g { n = split($4, a, ","); for (i = 1; i <= n; i++) if (a[i] == m) m = "";
					  if (m != "") $4 = ($4 == "" ? m : $4 "," m) } { print }' \
				"$root/etc/group" >"$root/etc/group.new" && mv "$root/etc/group.new" "$root/etc/group"
			chmod 0644 "$root/etc/group"
		fi
		install -d -m 0700 -o "$uid" -g "$uid" "$root$home"
	done
	# The recorder's files are read by the node from the host side and by
	# the MCP servers (the running recording); nobody else writes them.
	chmod 0755 "$root/var/lib/cloche/rec"
	# The trace is the agent's own account (docs/recording.md): its servers
	# and mcp-desktop append to it through the agent's group.
	chmod 2775 "$root/var/lib/cloche/trace"
}

check_libs() {
	local root="$1" b missing out
	missing=""
	for b in "$root"/opt/cloche/bin/*; do
		out="$(chroot "$root" /usr/bin/ldd "/opt/cloche/bin/$(basename "$b")" 2>&1)" || continue
		if grep -q 'not found' <<<"$out"; then
			missing+="$(basename "$b"): $(grep 'not found' <<<"$out" | awk '{print $1}' | tr '\n' ' ')"$'\n'
		fi
	done
	if [[ -n "$missing" ]]; then
		printf '%s' "$missing" | sed 's/^/template:   /' >&2
		die "libraries missing from the base: add their packages to rootfs/desktop.packages"
	fi
}

build_final() {
	local base="$1" dest="$2" digest="$3" base_name tmp b
	local -a bins
	mapfile -t bins < <(list_bins)
	base_name="$(basename "$base")"
	log "[2/3] layer on $base_name: ${#bins[@]} binaries$([[ -d "$APPLIANCE_OVERLAY" ]] && echo ' + appliance/rootfs-overlay')"
	tmp="$(new_tmp_path "$NAME")"
	TMPS+=("$tmp")
	btrfs subvolume snapshot "$base" "$tmp" >/dev/null

	install -d -m 0755 "$tmp/opt/cloche/bin"
	for b in "${bins[@]}"; do
		install -m 0755 -o 0 -g 0 "$b" "$tmp/opt/cloche/bin/"
	done
	install -d -m 0755 "$tmp/opt/cloche/lib"
	install -m 0644 -o 0 -g 0 "$COMPAT_LIB" "$tmp/opt/cloche/lib/"
	printf '/opt/cloche/lib/%s\n' "$(basename "$COMPAT_LIB")" >"$tmp/etc/ld.so.preload"
	chmod 0644 "$tmp/etc/ld.so.preload"
	if [[ -d "$APPLIANCE_OVERLAY" ]]; then
		copy_tree "$APPLIANCE_OVERLAY" "$tmp" || die "copy appliance/rootfs-overlay"
	fi
	add_service_users "$tmp"
	cat >"$tmp/opt/cloche/TEMPLATE" <<-EOF
		name=$NAME
		digest=$digest
		template=$NAME@$digest
		base=$base_name
		built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	EOF
	chmod 0644 "$tmp/opt/cloche/TEMPLATE"
	# A snapshot keeps its base's root mtime; give the layer its own, so
	# "newest by mtime" (ls -t) finds the template built last.
	touch "$tmp"
	check_libs "$tmp"
	fault_point final
	log "[3/3] seal read-only, prune old templates"
	seal "$tmp" "$dest"
}

# --- pruning ---------------------------------------------------------------

# A template is in use when a subvolume in the pool was snapshotted from it
# (sandbox rootfs, a template layer on a base) or some JSON under sandboxes/
# or checkpoints/ names it (meta.json, manifests).  Unsure means in use.
in_use() {
	local path="$1" uuid
	uuid="$(btrfs subvolume show "$path" 2>/dev/null | awk '$1 == "UUID:" { print $2 }')"
	[[ -n "$uuid" && "$uuid" != - ]] || return 0
	btrfs subvolume list -q "$POOL" 2>/dev/null | grep -qF "parent_uuid $uuid " && return 0
	grep -rqsF --include='*.json' "$(basename "$path")" "$POOL/sandboxes" "$POOL/checkpoints" && return 0
	return 1
}

# prune PREFIX KEEP_PATH: of the subvolumes named PREFIX@*, keep the newest
# $KEEP and KEEP_PATH; delete older unused ones, skipping any that will not go.
prune() {
	local prefix="$1" current="$2" list=() p n=0
	while IFS= read -r p; do
		list+=("$p")
	done < <(
		# Newest first by subvolume id: btrfs hands them out in increasing
		# order, so unlike times they never tie.
		for p in "$TPL/$prefix@"*; do
			[[ -d "$p" ]] || continue
			printf '%s %s\n' "$(btrfs inspect-internal rootid "$p" 2>/dev/null || echo 0)" "$p"
		done | sort -rn -k1,1 | cut -d' ' -f2-
	)
	((${#list[@]} > KEEP)) || return 0
	for p in "${list[@]}"; do
		n=$((n + 1))
		((n > KEEP)) || continue
		[[ "$p" != "$current" ]] || continue
		if in_use "$p"; then
			log "keeping old $(basename "$p"): still in use"
		elif remove_subvol "$p" 2>/dev/null; then
			log "pruned old $(basename "$p")"
		else
			log "could not delete old $(basename "$p"); kept"
		fi
	done
}

# --- main ------------------------------------------------------------------

force=0 # 1: top layer, 2: both layers
print_digest=0
while (($# > 0)); do
	case "$1" in
	--force) ((force == 2)) || force=1 ;;
	--force-base) force=2 ;;
	--print-digest) print_digest=1 ;;
	--print-base-digest) print_digest=2 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
	shift
done

BASE_DIGEST="$(base_digest)"
DIGEST="$(final_digest "$BASE_DIGEST")"
case "$print_digest" in
1)
	printf '%s\n' "$DIGEST"
	exit 0
	;;
2)
	printf '%s\n' "$BASE_DIGEST"
	exit 0
	;;
esac

[[ "$(id -u)" == 0 ]] || die "needs root (btrfs subvolumes, mmdebstrap --mode=root): sudo make template"
for tool in btrfs mmdebstrap setsid findmnt; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install btrfs-progs mmdebstrap util-linux)"
done
[[ -n "$(list_bins)" ]] || die "no cloche-* binaries in $BIN_DIR: run make all first"
[[ -x "$BIN_DIR/cloche-init" ]] || log "warning: $BIN_DIR/cloche-init is missing; the template will not boot"
[[ -f "$COMPAT_LIB" ]] || die "$COMPAT_LIB is missing: run make all first"

pool_ensure || die "the btrfs pool is not usable"
POOL="$(pool_dir)"
TPL="$POOL/templates"

# One build at a time per pool: a second build waits, then most likely reuses.
exec {lock_fd}>"$TPL/.build.lock"
if ! flock -n "$lock_fd"; then
	log "waiting for another template build in $TPL"
	flock "$lock_fd"
fi

trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

for stale in "$TPL"/.tmp-*; do
	[[ -e "$stale" ]] || continue
	if remove_subvol "$stale"; then
		log "removed $(basename "$stale") left by an interrupted build"
	else
		log "could not remove $stale"
	fi
done

FINAL="$TPL/$NAME@$DIGEST"
BASE="$TPL/$NAME-base@$BASE_DIGEST"
if ((!force)) && is_ready "$FINAL"; then
	log "reusing $NAME@$DIGEST"
	printf '%s\n' "$FINAL"
	exit 0
fi

start=$SECONDS
if ((force < 2)) && is_ready "$BASE"; then
	log "[1/3] reusing base $(basename "$BASE")"
else
	build_base "$BASE"
	base_secs=$((SECONDS - start))
fi
build_final "$BASE" "$FINAL" "$DIGEST"
prune "$NAME" "$FINAL"
prune "$NAME-base" "$BASE"

# Figures for docs/template.md: total size, and what the top layer adds.
read -r total excl < <(btrfs filesystem du -s --raw "$FINAL" 2>/dev/null | awk 'NR == 2 { print $1, $2 }') || true
mb() { awk -v b="${1:-0}" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
log "built $NAME@$DIGEST in $((SECONDS - start)) s${base_secs:+ (base layer ${base_secs} s)}: $(mb "${total:-0}") total, $(mb "${excl:-0}") not shared with the base"
printf '%s\n' "$FINAL"
