#!/usr/bin/env bash
# Installs what cloche's build, appliance and tests need on Debian 12, as
# root.  Idempotent and quiet: it only calls apt-get/npm when something is
# missing, and prints only on failure (set CLOCHE_VERBOSE=1 to see more).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
	# build
	build-essential pkg-config git check libsubunit-dev clang libclang-rt-14-dev
	libjansson-dev libwebsockets-dev libcurl4-openssl-dev libvncserver-dev libssl-dev
	libsqlite3-dev sqlite3
	libx11-dev libxtst-dev libxdamage-dev libxfixes-dev libxext-dev libxi-dev libxrandr-dev libpng-dev
	# sandboxes: btrfs pool, template build, netns (runsc: see below)
	btrfs-progs mmdebstrap iproute2 util-linux jq curl socat ca-certificates
	# what the tests drive: a display, a browser, real VNC clients, noVNC
	xvfb chromium novnc vncsnapshot libvncclient1 x11-utils x11-xserver-utils xdotool xclip libjpeg-turbo-progs openssl
	# node for the end-to-end clients (playwright-core, MCP SDK); python3 for
	# tests/lib/proxy-tool.py (the proxy test's upstream and raw clients)
	nodejs python3
	# every program resolves *.localhost (the all-in-one's proxy names) to loopback
	libnss-myhostname
	# bench/proxy.sh: cloche-proxy against nginx, driven by wrk
	nginx-light wrk
	# bench/report.sh: the charts of bench/RESULTS.md
	gnuplot-nox
	# checkpoints: zstd to compress images; awscli, a real S3 client, checks what
	# the S3 client stores in s3rver (tests/e2e, npm)
	zstd awscli
	# ffprobe reads the recordings tests/integration/test-record.sh downloads
	ffmpeg
	# deploy: systemd-analyze checks the units; systemd-nspawn boots a systemd
	# to start them (tests/integration/test-deploy-systemd.sh)
	systemd systemd-container
)

log() { [[ -z ${CLOCHE_VERBOSE:-} ]] || echo "install-deps: $*" >&2; }
quiet() {
	local out
	if ! out=$("$@" 2>&1); then
		echo "install-deps: \`$*\` failed:" >&2
		tail -n 30 <<<"$out" >&2
		return 1
	fi
}

[[ $(id -u) == 0 ]] || { echo "install-deps: run as root" >&2; exit 1; }

missing=()
for p in "${PKGS[@]}"; do
	[[ $p == \#* ]] && continue
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
	log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	quiet apt-get update -q
	quiet apt-get install -y -q --no-install-recommends "${missing[@]}"
	# Debian starts the nginx it installs, on port 80, where the
	# all-in-one's proxy listens: the benchmark runs its own instances.
	if [[ " ${missing[*]} " == *" nginx-light "* ]]; then
		systemctl disable --now nginx >/dev/null 2>&1 || service nginx stop >/dev/null 2>&1 || true
	fi
fi

# gVisor from bookworm-backports: bookworm's own runsc (0.0~20221219) refuses
# the statx calls of bookworm's coreutils, so `ls` and `stat` fail in every
# sandbox (docs/sandbox.md).  The backports suite lives on the mirror the
# machine already uses; only runsc is taken from it (-t), everything else
# stays on bookworm.
RUNSC_MIN=0.0~20240729
runsc_ok() {
	local v
	v=$(dpkg-query -W -f='${Version}' runsc 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge "$RUNSC_MIN"
}
backports_sources() {
	local uri
	uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
	[[ -n $uri ]] || uri=$(awk '$1 == "deb" && $3 ~ /^bookworm/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	[[ -n $uri ]] || uri=http://deb.debian.org/debian
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri"
}
if ! runsc_ok; then
	log "apt-get install -t bookworm-backports runsc"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-cache policy 2>/dev/null | grep -q 'bookworm-backports'; then
		backports_sources >/etc/apt/sources.list.d/cloche-backports.sources
	fi
	quiet apt-get update -q
	quiet apt-get install -y -q --no-install-recommends -t bookworm-backports runsc
	runsc_ok || { echo "install-deps: runsc >= $RUNSC_MIN is needed (bookworm-backports)" >&2; exit 1; }
fi

# The kernel must know btrfs (a module on stock kernels, built in on others).
if ! grep -qw btrfs /proc/filesystems && command -v modprobe >/dev/null; then
	modprobe btrfs 2>/dev/null || true
fi
grep -qw btrfs /proc/filesystems || echo "install-deps: this kernel has no btrfs; sandboxes need it" >&2

# npm packages for the end-to-end tests, pinned by tests/e2e/package-lock.json.
if [[ ! -d tests/e2e/node_modules ]] || [[ tests/e2e/package-lock.json -nt tests/e2e/node_modules ]]; then
	log "npm ci in tests/e2e"
	(cd tests/e2e && quiet npm ci --no-audit --no-fund --loglevel=error)
	touch tests/e2e/node_modules
fi
