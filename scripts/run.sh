#!/usr/bin/env bash
# `make run`: installs what is needed, builds, makes the desktop template
# when missing, and starts the all-in-one appliance on loopback: one
# cloche-node (warm pool of one desktop), cloche-portal and cloche-proxy
# (http://{port}-{id}.cloche.localhost), an admin key in the CLI's config
# ($AIO_ENV), and one sandbox acquired for the user, whose links go through
# the proxy.  Run again: prints the status and starts nothing twice.
# Layout: scripts/lib/aio.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/aio.sh
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
		--advertise-url "$AIO_NODE_URL" --proxy-domain "$AIO_DOMAIN" \
		--proxy-admin "http://127.0.0.1:$AIO_PROXY_ADMIN_PORT" \
		>>"$AIO_LOG/node.log" 2>&1 </dev/null &
	echo $! >"$AIO_RUN/node.pid"
	aio_wait_http "$AIO_NODE_URL/healthz" 60 || { aio_say "cloche-node did not start: $AIO_LOG/node.log"; exit 1; }
	aio_say "started cloche-node on $AIO_NODE_URL"
fi
if aio_alive proxy; then
	aio_say "cloche-proxy is running (pid $(cat "$AIO_RUN/proxy.pid"))"
else
	listen=127.0.0.1; grep -qs . /proc/net/if_inet6 && listen+=,::1 # *.localhost may resolve to either
	setsid build/bin/cloche-proxy --listen "$listen" --port "$AIO_PROXY_PORT" \
		--domain "$AIO_DOMAIN" --portal "$AIO_URL" --node-credential-file "$AIO_ETC/node.cred" \
		--node-name "$(hostname -s)" --node-socket "$AIO_NODE_SOCK" \
		--token-key-file "$AIO_STATE/token.key" --admin-port "$AIO_PROXY_ADMIN_PORT" \
		>>"$AIO_LOG/proxy.log" 2>&1 </dev/null &
	echo $! >"$AIO_RUN/proxy.pid"
	aio_wait_http "$AIO_PROXY_ADMIN/healthz" 20 ||
		{ aio_say "cloche-proxy did not start (port $AIO_PROXY_PORT taken? CLOCHE_PROXY_PORT picks another): $AIO_LOG/proxy.log"; exit 1; }
	aio_say "started cloche-proxy on port $AIO_PROXY_PORT (*.$AIO_DOMAIN)"
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
	sb=$(aio_api POST /sbv1/acquire '{"ttl": 604800, "wait": 300, "labels": {"made-by": "make-run"}}')
	id=$(jq -r '.id // empty' <<<"$sb")
	[[ $(jq -r '.state // empty' <<<"$sb") == ready ]] || { aio_say "acquire failed: $sb"; exit 1; }
	echo "$id" >"$AIO_RUN/sandbox"
fi
url() { jq -r "$1" <<<"$sb"; }
cat <<MSG

cloche is running: portal $AIO_URL, node $AIO_NODE_URL, proxy *.$AIO_DOMAIN; your sandbox $id (expires $(url .expires_at)).
  Desktop in a browser (noVNC):  $(url .urls.novnc)
  MCP servers (Streamable HTTP): shell   $(url .urls.mcp.shell)
                                 desktop $(url .urls.mcp.desktop)   (computer use)
                                 browser $(url .urls.mcp.browser)   (playwright-mcp style tools)
    with the header              Authorization: Bearer $(url .token)
  Any port of the sandbox:       $(url .urls.port)  (same token)
  More sandboxes:                build/bin/cloche acquire     (build/bin/cloche --help; the key is in $AIO_ENV)
  Dashboard:                     $AIO_URL/   (log in with the key in $AIO_ENV)
  Sandboxes for agents (MCP):    $AIO_URL/mcp   (the same key as Bearer)
  API:                           $AIO_URL/sbv1/openapi.json
  Logs:                          $AIO_LOG/portal.log, node.log, proxy.log
  Stop:                          make stop    (sandboxes end; make clean-data also drops the portal's database)
MSG
