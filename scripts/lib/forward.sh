# shellcheck shell=bash
# Loopback port forwards into a sandbox for `make run`: a socat listener on
# 127.0.0.1 that, per connection, asks the node agent for a connection to
# the sandbox's port (`cloche-node connect`, the port-connect path the proxy
# will use).  Stand-in until cloche-proxy exists.
FW_RUN_DIR=${FW_RUN_DIR:-/run/cloche/forward}
FW_NODE_BIN=${FW_NODE_BIN:-$PWD/build/bin/cloche-node}

# fw_start NAME HOST_PORT SANDBOX_ID SANDBOX_PORT SOCKET
fw_start() {
	local name=$1 hport=$2 id=$3 sport=$4 sock=$5 pidf
	mkdir -p "$FW_RUN_DIR"
	pidf="$FW_RUN_DIR/$name-$hport.pid"
	if [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
		return 0
	fi
	setsid socat "TCP-LISTEN:$hport,bind=127.0.0.1,reuseaddr,fork" \
		"EXEC:$FW_NODE_BIN --connect-socket $sock connect $id $sport" \
		</dev/null >/dev/null 2>&1 &
	echo $! >"$pidf"
	# Fail now, not at the first connection, when the port is taken.
	sleep 0.2
	kill -0 "$(cat "$pidf")" 2>/dev/null || { echo "cannot listen on 127.0.0.1:$hport (in use?)" >&2; rm -f "$pidf"; return 1; }
}

# fw_stop_all NAME
fw_stop_all() {
	local name=$1 f
	for f in "$FW_RUN_DIR/$name"-*.pid; do
		[[ -f $f ]] || continue
		kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
}
