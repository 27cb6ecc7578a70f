# shellcheck shell=bash
# Loopback port forwards into a sandbox for `make run`: a socat listener on
# 127.0.0.1 that, per connection, connects to 10.0.2.15:<port> from inside
# the sandbox's router netns.  Stand-in until cloche-proxy exists.
FW_RUN_DIR=${FW_RUN_DIR:-/run/cloche/forward}

# fw_start ID HOST_PORT SANDBOX_PORT
fw_start() {
	local id=$1 hport=$2 sport=$3 pidf
	mkdir -p "$FW_RUN_DIR"
	pidf="$FW_RUN_DIR/$id-$hport.pid"
	if [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
		return 0
	fi
	setsid socat "TCP-LISTEN:$hport,bind=127.0.0.1,reuseaddr,fork" \
		"SYSTEM:exec nsenter --net=/var/run/netns/R-$id socat STDIO TCP\\:10.0.2.15\\:$sport" \
		</dev/null >/dev/null 2>&1 &
	echo $! >"$pidf"
	# Fail now, not at the first connection, when the port is taken.
	sleep 0.2
	kill -0 "$(cat "$pidf")" 2>/dev/null || { echo "cannot listen on 127.0.0.1:$hport (in use?)" >&2; rm -f "$pidf"; return 1; }
}

fw_stop_all() {
	local id=$1 f
	for f in "$FW_RUN_DIR/$id"-*.pid; do
		[[ -f $f ]] || continue
		kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
}
