# shellcheck shell=bash
# scripts/lib/pool.sh: the btrfs pool that holds templates, sandbox rootfs
# snapshots and checkpoints, for the shell side of cloche (template build,
# tests, all-in-one scripts).  Source it; it defines only `pool_` functions
# and reads its settings from the environment when a function is called:
#
#   CLOCHE_POOL       pool directory             (default /var/lib/cloche)
#   CLOCHE_POOL_IMG   loop image used when the pool directory is not on btrfs
#                                                (default /var/lib/cloche.img)
#   CLOCHE_POOL_SIZE  apparent size of a new loop image (default 64G; sparse)
#   CLOCHE_NODE_BIN   the cloche-node that sets the pool up (default: this
#                     checkout's build/bin/cloche-node)
#
# Functions print nothing on success; on failure they print one line to
# stderr saying what failed and return non-zero.  They never exit the caller.

pool_dir() {
	printf '%s\n' "${CLOCHE_POOL:-/var/lib/cloche}"
}

pool_img() {
	printf '%s\n' "${CLOCHE_POOL_IMG:-/var/lib/cloche.img}"
}

pool_err() {
	printf 'pool: %s\n' "$*" >&2
	return 1
}

# pool_is_btrfs DIR: true when DIR exists and lives on a btrfs filesystem
# (a btrfs mount, or any directory inside one).
pool_is_btrfs() {
	[[ -d "$1" ]] && [[ "$(stat -f -c %T "$1" 2>/dev/null)" == btrfs ]]
}

# pool_node_bin: the cloche-node that sets the pool up (CLOCHE_NODE_BIN, or
# this checkout's build).
pool_node_bin() {
	printf '%s\n' "${CLOCHE_NODE_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin/cloche-node}"
}

# pool_ensure: make the pool usable.  When the pool directory is already on
# btrfs it is used as it is; otherwise the loop image is created (sparse) if
# missing, formatted, and mounted on the pool directory.  Then the top-level
# directories exist.  Safe to call any number of times and from several
# processes at once.  cloche-node does it (`cloche-node pool`, the same code
# it runs when it starts), so the shell and the agent cannot disagree on
# what a pool is: build it first (make).
pool_ensure() {
	local bin size gib
	bin="$(pool_node_bin)"
	size="${CLOCHE_POOL_SIZE:-64G}"
	[[ -x "$bin" ]] || pool_err "$bin is not built yet (run make)" || return
	[[ $size =~ ^([0-9]+)([GT])$ ]] ||
		pool_err "CLOCHE_POOL_SIZE: give GiB as NNG or TiB as NNT, not \`$size'" || return
	gib=${BASH_REMATCH[1]}
	[[ ${BASH_REMATCH[2]} == T ]] && gib=$((gib * 1024))
	"$bin" --log-level error --pool "$(pool_dir)" --pool-image "$(pool_img)" \
		--pool-image-size "$gib" pool 2>&1 | sed 's/^cloche-node pool: /pool: /' >&2
	return "${PIPESTATUS[0]}"
}

# pool_free_bytes: bytes still free for new data in the pool, as the kernel
# reports it to statfs (for btrfs an estimate).  Prints one integer.
pool_free_bytes() {
	local dir avail bsize
	dir="$(pool_dir)"
	read -r avail bsize < <(stat -f -c '%a %S' "$dir" 2>/dev/null) ||
		pool_err "statfs $dir" || return
	[[ -n "$avail" && -n "$bsize" ]] || pool_err "statfs $dir" || return
	printf '%s\n' "$((avail * bsize))"
}

# pool_umount: unmount the pool when it is a loop image we mount; leaves a
# pool that is a plain btrfs directory alone.  Used by tests for throwaway
# pools.
pool_umount() {
	local dir
	dir="$(pool_dir)"
	mountpoint -q "$dir" || return 0
	[[ "$(findmnt -n -o SOURCE --target "$dir")" == /dev/loop* ]] || return 0
	umount "$dir" || pool_err "umount $dir"
}
