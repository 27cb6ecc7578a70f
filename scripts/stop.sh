#!/usr/bin/env bash
# `make stop`: stops what `make run` started and leaves no process, netns or
# mount behind: the proxy, every sandbox (leased ones are released through
# the portal, so its records stay true; warm members are destroyed), the
# portal and the node agent, then the pool's loop mount.  The portal's
# database, the templates and the pool image stay (`make clean-data` drops
# the database and what sandboxes left in the pool).
#
# Until sandboxes can hibernate, stopping ends them: there is no way to
# keep a running gVisor sandbox without its processes.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/aio.sh
. scripts/lib/pool.sh

aio_stop_daemon proxy
if aio_alive portal && [[ -n $(aio_key) ]]; then
	ids=$(aio_api GET '/sbv1/sandboxes?state=ready&limit=500' | jq -r '.sandboxes[].id' 2>/dev/null || true)
	for id in $ids; do aio_api POST "/sbv1/sandboxes/$id/release" >/dev/null || true; done
	for ((i = 0; i < 600; i++)); do
		n=$(aio_api GET '/sbv1/sandboxes?state=releasing' | jq '.sandboxes | length' 2>/dev/null || echo 0)
		[[ $n == 0 ]] && break
		sleep 0.1
	done
	[[ -z $ids ]] || aio_say "released $(wc -w <<<"$ids") sandbox(es)"
fi
aio_stop_daemon portal
aio_stop_daemon node
rm -f "$AIO_RUN/sandbox"

# What is left on the node (warm members, anything a crash left) goes
# through the agent's own teardown: one more agent run without a warm pool.
if [[ -d $AIO_POOL/sandboxes ]] && compgen -G "$AIO_POOL/sandboxes/*" >/dev/null; then
	build/bin/cloche-node --listen 127.0.0.1 --port "$AIO_NODE_PORT" \
		--credential-file "$AIO_ETC/node.cred" --pool "$AIO_POOL" \
		--runsc-root "$AIO_RUNSC_ROOT" --connect-socket "$AIO_NODE_SOCK" \
		>>"$AIO_LOG/node.log" 2>&1 </dev/null &
	echo $! >"$AIO_RUN/node.pid"
	if aio_wait_http "$AIO_NODE_URL/healthz" 60; then
		for sid in $(aio_node GET /v1/sandboxes | jq -r '.sandboxes[].id'); do
			aio_node DELETE "/v1/sandboxes/$sid" >/dev/null || true
		done
	fi
	aio_stop_daemon node
fi
rm -f "$AIO_NODE_SOCK"
CLOCHE_POOL=$AIO_POOL pool_umount || aio_say "the pool stays mounted: something else uses it"
aio_say "stopped (the portal's database and the templates stay)"
