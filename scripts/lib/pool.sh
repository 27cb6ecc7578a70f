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

# pool_ensure: make the pool usable.  When the pool directory is already on
# btrfs it is used as it is; otherwise the loop image is created (sparse) if
# missing, formatted, and mounted on the pool directory.  Safe to call any
# number of times and from several processes at once (an flock beside the
# image serialises the mount step).  Then the top-level directories exist.
pool_ensure() {
	local dir img size lock fd
	dir="$(pool_dir)"
	img="$(pool_img)"
	size="${CLOCHE_POOL_SIZE:-64G}"

	if ! pool_is_btrfs "$dir"; then
		mkdir -p "$dir" "$(dirname "$img")" || pool_err "mkdir $dir" || return
		lock="$img.lock"
		exec {fd}>>"$lock" || pool_err "open lock $lock" || return
		if ! flock -w 120 "$fd"; then
			exec {fd}>&-
			pool_err "timed out waiting for $lock"
			return
		fi
		local rc=0
		pool_mount_locked "$dir" "$img" "$size" || rc=$?
		exec {fd}>&-
		((rc == 0)) || return "$rc"
	fi

	mkdir -p "$dir/templates" "$dir/sandboxes" "$dir/checkpoints" ||
		pool_err "create directories in $dir" || return
	# Checkpoints hold memory images (secrets); sandboxes only need to be
	# traversable by runsc's gofer.
	if ! chmod 0755 "$dir/templates" || ! chmod 0711 "$dir/sandboxes" ||
		! chmod 0700 "$dir/checkpoints"; then
		pool_err "chmod directories in $dir"
	fi
}

# pool_mount_locked DIR IMG SIZE: the mount half of pool_ensure, run under
# its lock.  Another process may have mounted the pool meanwhile: check again.
pool_mount_locked() {
	local dir="$1" img="$2" size="$3"

	pool_is_btrfs "$dir" && return 0
	if mountpoint -q "$dir"; then
		pool_err "$dir is a mount point of a $(stat -f -c %T "$dir") filesystem, not btrfs"
		return
	fi
	# Mounting over a non-empty directory would hide what is in it.
	if [[ -n "$(ls -A "$dir" 2>/dev/null)" ]]; then
		pool_err "$dir is not on btrfs and not empty; move its contents away or set CLOCHE_POOL"
		return
	fi
	if [[ ! -e "$img" ]]; then
		command -v mkfs.btrfs >/dev/null || pool_err "mkfs.btrfs not found (apt-get install btrfs-progs)" || return
		# Format a temporary name and rename: a crash between truncate and
		# mkfs must not leave an image that looks ready.
		local tmp="$img.tmp-$$"
		if ! truncate -s "$size" "$tmp" ||
			! mkfs.btrfs -q -L cloche "$tmp" >/dev/null; then
			rm -f "$tmp"
			pool_err "create btrfs image $img ($size)"
			return
		fi
		mv -f "$tmp" "$img" || pool_err "rename $tmp to $img" || return
	fi
	# noatime: atime updates would rewrite metadata on every read and make
	# snapshots diverge from their template for nothing.
	mount -o loop,noatime "$img" "$dir" ||
		pool_err "mount $img on $dir"
	pool_is_btrfs "$dir" || pool_err "$dir is still not btrfs after mounting $img"
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
