#!/bin/bash
# rootfs/desktop-base.sh: the base layer of the `desktop` template, i.e.
# everything that comes from Debian: a bookworm rootfs made by mmdebstrap with
# the packages of rootfs/desktop.packages, the files of rootfs/base-overlay/,
# the `agent` user and the small fixes a rootfs needs to run under gVisor.
# rootfs/build-template.sh calls `desktop-base.sh build DIR` on an empty
# btrfs subvolume and snapshots the result; this file, desktop.packages and
# base-overlay/ are what the base digest covers, so any change to how the
# base is made lives here.
#
#   desktop-base.sh build DIR   make the base rootfs in the empty directory DIR
#   desktop-base.sh hook DIR    (mmdebstrap customize hook; internal)
#
# Environment: CLOCHE_APT_SOURCES  apt sources for the rootfs (a sources.list
# or deb822 .sources file, or a mirror URL); default: the host's Debian
# sources.  CLOCHE_BASE_LOG  file that receives mmdebstrap's output.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
packages_file="$here/desktop.packages"
overlay="$here/base-overlay"
suite=bookworm
agent_uid=1000

die() {
	printf 'template: base: %s\n' "$*" >&2
	exit 1
}

# Package lines of desktop.packages: "name" (install) or "name /path"
# (unpack only /path).  Prints "name<TAB>path" with an empty path for the first.
read_packages() {
	local line name path rest
	while IFS= read -r line || [[ -n "$line" ]]; do
		line="${line%%#*}"
		read -r name path rest <<<"$line" || true
		[[ -n "$name" ]] || continue
		[[ -z "$rest" ]] || die "desktop.packages: too many words in \`$line\`"
		printf '%s\t%s\n' "$name" "$path"
	done <"$packages_file"
}

default_sources() {
	if [[ -n "${CLOCHE_APT_SOURCES:-}" ]]; then
		printf '%s\n' "$CLOCHE_APT_SOURCES"
	elif [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
		printf '%s\n' /etc/apt/sources.list.d/debian.sources
	elif [[ -s /etc/apt/sources.list ]]; then
		printf '%s\n' /etc/apt/sources.list
	fi
	# Nothing printed: mmdebstrap's own default (deb.debian.org, with updates
	# and security for a stable suite).
}

cmd_build() {
	local root="$1" name path includes=() sources hook log
	[[ -d "$root" ]] || die "$root is not a directory"
	command -v mmdebstrap >/dev/null || die "mmdebstrap not found (apt-get install mmdebstrap)"

	while IFS=$'\t' read -r name path; do
		[[ -n "$path" ]] || includes+=("$name")
	done < <(read_packages)
	((${#includes[@]} > 0)) || die "no packages in $packages_file"

	sources="$(default_sources)"
	# shellcheck disable=SC2016 # "$1" is for the shell mmdebstrap runs the hook in
	hook="$(printf '%q hook "$1"' "$here/desktop-base.sh")"
	log="${CLOCHE_BASE_LOG:-/dev/stderr}"

	# Recommends stay out (mmdebstrap's default); docs, man pages and
	# translations are never unpacked, and the dpkg config that says so stays
	# in the rootfs so later installs stay lean too.
	local args=(
		--mode=root --variant=apt --format=directory
		# Sets up merged /usr itself and installs usr-is-merged, so that apt
		# does not pick usrmerge (and perl, ~50 MB) for init-system-helpers.
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
		"--include=$(
			IFS=,
			printf '%s' "${includes[*]}"
		)"
		'--aptopt=Acquire::Languages "none"'
		'--dpkgopt=path-exclude=/usr/share/man/*'
		'--dpkgopt=path-exclude=/usr/share/info/*'
		'--dpkgopt=path-exclude=/usr/share/locale/*'
		'--dpkgopt=path-include=/usr/share/locale/locale.alias'
		'--dpkgopt=path-exclude=/usr/share/doc/*'
		'--dpkgopt=path-include=/usr/share/doc/*/copyright'
		'--dpkgopt=path-exclude=/usr/share/lintian/*'
		# Mesa's DRI drivers and the LLVM and Z3 they link (~165 MB) only
		# give Xvfb its GLX extension, which nothing here uses: Chromium
		# runs with --disable-gpu and renders WebGL with its own SwiftShader.
		# Without them Xvfb starts without GLX and maps 115 MB less.
		'--dpkgopt=path-exclude=/usr/lib/*/dri/*'
		'--dpkgopt=path-exclude=/usr/lib/*/libLLVM-*'
		'--dpkgopt=path-exclude=/usr/lib/*/libz3.so*'
		"--customize-hook=$hook"
		"$suite" "$root"
	)
	[[ -z "$sources" ]] || args+=("$sources")
	mmdebstrap "${args[@]}" >>"$log" 2>&1 || die "mmdebstrap failed (output in $log)"
	finish "$root"
}

# Runs inside mmdebstrap, before its cleanup, while the apt lists are still
# there: unpack the "files only" packages.
cmd_hook() {
	local root="$1" name path deb tmp
	tmp="$(mktemp -d "$root/tmp/cloche-deb.XXXXXX")"
	chmod 0755 "$tmp"
	while IFS=$'\t' read -r name path; do
		[[ -n "$path" ]] || continue
		[[ "$path" == /* ]] || die "desktop.packages: path \`$path\` of $name is not absolute"
		# shellcheck disable=SC2016 # expanded by the sh inside the chroot
		chroot "$root" sh -c 'cd "$1" && apt-get -q -q -o APT::Sandbox::User=root download "$2"' \
			sh "${tmp#"$root"}" "$name" || die "apt-get download $name"
		deb="$(find "$tmp" -maxdepth 1 -name "${name}_*.deb" -print -quit)"
		[[ -n "$deb" ]] || die "download of $name left no .deb"
		# Its copyright file comes along; scripts under utils/ and the like
		# do not run without the dependencies we left out, so leave them too.
		dpkg-deb --fsys-tarfile "$deb" |
			tar -C "$root" -x --no-same-owner --wildcards \
				--exclude="./${path#/}/utils" \
				"./${path#/}" "./usr/share/doc/$name/copyright" ||
			die "unpack $path from $deb"
		rm -f "$deb"
	done < <(read_packages)
	rm -rf "$tmp"
}

add_agent_user() {
	local root="$1"
	if grep -q '^agent:' "$root/etc/passwd"; then
		return 0
	fi
	awk -F: -v u="$agent_uid" '$3 == u { bad = 1 } END { exit bad }' \
		"$root/etc/passwd" "$root/etc/group" || die "uid/gid $agent_uid already taken"
	# Written directly: useradd (package passwd) is not in the apt variant,
	# and the account needs no password (no login, no sudo).
	printf 'agent:x:%d:%d:cloche agent:/home/agent:/bin/bash\n' "$agent_uid" "$agent_uid" >>"$root/etc/passwd"
	printf 'agent:x:%d:\n' "$agent_uid" >>"$root/etc/group"
	printf 'agent:!:%d:0:99999:7:::\n' "$(($(date +%s) / 86400))" >>"$root/etc/shadow"
	[[ ! -e "$root/etc/gshadow" ]] || printf 'agent:!::\n' >>"$root/etc/gshadow"
	mkdir -p "$root/home/agent"
	cp -a "$root/etc/skel/." "$root/home/agent/"
	chown -R "$agent_uid:$agent_uid" "$root/home/agent"
	chmod 0750 "$root/home/agent"
	# The MCP servers' action trace (docs/recording.md): on the rootfs so it
	# follows the sandbox, written by the agent's servers, read by the node.
	mkdir -p "$root/var/lib/cloche/trace"
	chown "$agent_uid:$agent_uid" "$root/var/lib/cloche/trace"
	chmod 0755 "$root/var/lib/cloche/trace"
}

# After mmdebstrap (which blanks /etc/machine-id and copies the host's
# /etc/hostname and /etc/resolv.conf): make the rootfs ours.
finish() {
	local root="$1"

	# base-overlay/: Chromium policies and preferences.  Modes come from the
	# executable bit only, owners are root, existing directories keep theirs.
	if [[ -d "$overlay" ]]; then
		tar -C "$overlay" -c --owner=0 --group=0 --numeric-owner \
			--mode='u+w,go-w,a+rX' . |
			tar -C "$root" -x --no-overwrite-dir || die "copy base-overlay"
	fi

	add_agent_user "$root"

	printf 'cloche\n' >"$root/etc/hostname"
	cat >"$root/etc/hosts" <<-'EOF'
		127.0.0.1	localhost
		127.0.1.1	cloche
		::1	localhost ip6-localhost ip6-loopback
		ff02::1	ip6-allnodes
		ff02::2	ip6-allrouters
	EOF
	# The host's resolver means nothing inside a sandbox; the node writes the
	# sandbox's own when it gives it a network.
	rm -f "$root/etc/resolv.conf"
	: >"$root/etc/resolv.conf"

	# One id per template; things that must differ per sandbox are set after
	# start or restore (docs/architecture.md).  D-Bus clients (Chromium) read the second
	# path.
	local id
	id="$(tr -d '-' </proc/sys/kernel/random/uuid)"
	printf '%s\n' "$id" >"$root/etc/machine-id"
	mkdir -p "$root/var/lib/dbus"
	ln -sfn /etc/machine-id "$root/var/lib/dbus/machine-id"

	# Mount points for the tmpfs mounts of the OCI spec, and /opt/cloche.
	mkdir -p "$root/tmp" "$root/dev/shm" "$root/run" "$root/opt/cloche/bin"
	chmod 1777 "$root/tmp" "$root/dev/shm"
	chmod 0755 "$root/run"

	# Whatever the dpkg path filters missed (files mmdebstrap unpacks before
	# dpkg is configured) and caches that only matter to apt.
	find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete 2>/dev/null || true
	find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
	rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/lintian"
	find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias \
		-exec rm -rf {} + 2>/dev/null || true
	rm -rf "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb \
		"$root/var/lib/apt/lists/"* "$root/var/cache/debconf/"*-old \
		"$root/var/lib/dpkg/"*-old
	find "$root/var/log" -type f -delete
}

case "${1:-}" in
build)
	[[ $# -eq 2 ]] || die "usage: desktop-base.sh build DIR"
	cmd_build "$2"
	;;
hook)
	[[ $# -eq 2 ]] || die "usage: desktop-base.sh hook DIR"
	cmd_hook "$2"
	;;
*)
	die "usage: desktop-base.sh build DIR"
	;;
esac
