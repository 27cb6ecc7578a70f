#!/usr/bin/env bash
# `make run`: installs what is needed, builds, makes the desktop template
# when missing, and starts the all-in-one appliance on loopback: one
# cloche-node (warm pool of one desktop) and cloche-portal, an admin key in
# the CLI's config ($AIO_ENV), and one sandbox acquired for the user, with
# loopback forwards into it until cloche-proxy exists.  Run again: prints
# the status and starts nothing twice.  Layout: scripts/lib/aio.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/aio.sh
. scripts/lib/forward.sh
. scripts/lib/pool.sh

scripts/install-deps.sh
aio_say "building"
make -s -j2 all >/dev/null
CLOCHE_POOL=$AIO_POOL pool_ensure
ls -d "$AIO_POOL"/templates/desktop@* >/dev/null 2>&1 ||
	aio_say "making the desktop template (the first time: a few minutes, mostly downloads)"
rootfs/build-template.sh >/dev/null
mkdir -p "$AIO_ETC" "$AIO_STATE" "$AIO_RUN" "$AIO_LOG"
chmod 0700 "$AIO_ETC" "$AIO_STATE" "$AIO_RUN"
[[ -s $AIO_ETC/node.cred ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$AIO_ETC/node.cred")

# cloche-portal first: the node heartbeats to it.
if aio_alive portal; then
	aio_say "cloche-portal is running (pid $(cat "$AIO_RUN/portal.pid"))"
else
	setsid build/bin/cloche-portal --listen 127.0.0.1 --port "$AIO_PORTAL_PORT" \
		--db "$AIO_STATE/portal.db" --token-key-file "$AIO_STATE/token.key" \
		--node-credential-file "$AIO_ETC/node.cred" --proxy-url "$AIO_PROXY_URL" \
		--ttl-max 7d >>"$AIO_LOG/portal.log" 2>&1 </dev/null &
	echo $! >"$AIO_RUN/portal.pid"
	aio_wait_http "$AIO_URL/healthz" 20 || { aio_say "cloche-portal did not start: $AIO_LOG/portal.log"; exit 1; }
	aio_say "started cloche-portal on $AIO_URL"
fi
if aio_alive node; then
	aio_say "cloche-node is running (pid $(cat "$AIO_RUN/node.pid"))"
else
	setsid build/bin/cloche-node --listen 127.0.0.1 --port "$AIO_NODE_PORT" \
		--credential-file "$AIO_ETC/node.cred" --pool "$AIO_POOL" \
		--runsc-root "$AIO_RUNSC_ROOT" --connect-socket "$AIO_NODE_SOCK" \
		--warm-pool desktop=1 --portal "$AIO_URL" --node-name "$(hostname -s)" \
		--advertise-url "$AIO_NODE_URL" >>"$AIO_LOG/node.log" 2>&1 </dev/null &
	echo $! >"$AIO_RUN/node.pid"
	aio_wait_http "$AIO_NODE_URL/healthz" 60 || { aio_say "cloche-node did not start: $AIO_LOG/node.log"; exit 1; }
	aio_say "started cloche-node on $AIO_NODE_URL"
fi

# An admin key for the CLI, kept while it works.
if [[ $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(aio_key)" "$AIO_URL/sbv1/keys") != 200 ]]; then
	key=$(build/bin/cloche-portal --db "$AIO_STATE/portal.db" key-create "all-in-one $(date -u +%FT%TZ)" admin)
	(umask 077 && cat >"$AIO_ENV" <<ENV
# Written by make run: the all-in-one portal and its admin key (cloche CLI).
CLOCHE_URL=$AIO_URL
CLOCHE_API_KEY=$key
CLOCHE_DOMAIN=$AIO_DOMAIN
CLOCHE_PROXY_URL=$AIO_PROXY_URL
ENV
	)
	aio_say "made an admin key ($AIO_ENV)"
fi

# The user's sandbox: the one acquired before while it is still ready.
id=$(cat "$AIO_RUN/sandbox" 2>/dev/null || true)
sb=
[[ -n $id ]] && sb=$(aio_api GET "/sbv1/sandboxes/$id" 2>/dev/null || true)
if [[ $(jq -r '.state // empty' <<<"$sb" 2>/dev/null) != ready ]]; then
	aio_say "acquiring a desktop (the first one boots Chromium under gVisor: a few seconds)"
	fw_stop_all aio
	sb=$(aio_api POST /sbv1/acquire '{"ttl": 604800, "wait": 300, "labels": {"made-by": "make-run"}}')
	id=$(jq -r '.id // empty' <<<"$sb")
	[[ $(jq -r '.state // empty' <<<"$sb") == ready ]] || { aio_say "acquire failed: $sb"; exit 1; }
	echo "$id" >"$AIO_RUN/sandbox"
fi
sid=$(jq -r .node_sandbox_id <<<"$sb")
secret=$(aio_node GET "/v1/sandboxes/$sid" | jq -r .vnc_secret)
for f in "${AIO_FORWARDS[@]}"; do
	fw_start aio "${f%%:*}" "$sid" "${f##*:}" "$AIO_NODE_SOCK"
done

port() { local f; for f in "${AIO_FORWARDS[@]}"; do [[ ${f##*:} == "$1" ]] && echo "${f%%:*}"; done; }
cat <<MSG

cloche is running: portal $AIO_URL, node $AIO_NODE_URL, your sandbox $id (expires $(jq -r .expires_at <<<"$sb")).
  Desktop in a browser (noVNC):  http://127.0.0.1:$(port 6080)/?secret=$secret
  VNC client:                    127.0.0.1:$(port 5900)  (password ${secret:0:8})
  MCP servers (Streamable HTTP): shell   http://127.0.0.1:$(port 8889)/mcp
                                 desktop http://127.0.0.1:$(port 8100)/mcp   (computer use)
                                 browser http://127.0.0.1:$(port 7999)/mcp   (playwright-mcp style tools)
  Health:                        http://127.0.0.1:$(port 8080)/health
  More sandboxes:                build/bin/cloche acquire     (build/bin/cloche --help; the key is in $AIO_ENV)
  API:                           $AIO_URL/sbv1/openapi.json
  Logs:                          $AIO_LOG/portal.log, $AIO_LOG/node.log
  Stop:                          make stop    (sandboxes end; make clean-data also drops the portal's database)
MSG
