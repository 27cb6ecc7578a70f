# shellcheck shell=bash
# The all-in-one appliance's layout, shared by `make run` and `make stop`
# (scripts/run.sh, scripts/stop.sh).  Every setting can be overridden from
# the environment, so a test can run a second appliance beside the first.
#
# The three start-ups of the daemons stay three, for these reasons: this one
# (make run) is what a user keeps: fixed ports (7000, 7070, 80), system
# directories, daemons in their own sessions with pid files that outlive
# the shell, re-runs that start nothing twice, a warm pool and week-long
# leases.  tests/lib/stack.sh is a throwaway child of one test (free ports,
# a temporary directory, fast heartbeats, everything killed by the test's
# EXIT trap, its stop checked), and tests/lib/cluster.sh runs several agents
# in network namespaces.  Sharing code would tie `make run` to tests/ (or
# the tests to /etc and fixed ports); test-run.sh tests this one as it is.
# aio_wait_http is tests/lib/tap.sh's wait_for on a URL for the same reason.
AIO_ETC=${CLOCHE_AIO_ETC:-/etc/cloche}                 # node credential
AIO_STATE=${CLOCHE_AIO_STATE:-/var/lib/cloche-portal}  # portal database, token key
AIO_RUN=${CLOCHE_AIO_RUN:-/run/cloche/aio}             # pid files, the sandbox id
AIO_LOG=${CLOCHE_AIO_LOG:-/var/log/cloche}             # node.log, portal.log
AIO_POOL=${CLOCHE_POOL:-/var/lib/cloche}
AIO_ENV=${CLOCHE_AIO_ENV:-$AIO_POOL/aio.env}           # what the CLI reads
AIO_PORTAL_PORT=${CLOCHE_PORTAL_PORT:-7000}
AIO_NODE_PORT=${CLOCHE_NODE_PORT:-7070}
AIO_DOMAIN=${CLOCHE_DOMAIN:-cloche.localhost}
# cloche-proxy: *.cloche.localhost resolves to loopback in browsers (and curl)
# with no DNS set up.
AIO_PROXY_PORT=${CLOCHE_PROXY_PORT:-80}
AIO_PROXY_ADMIN_PORT=${CLOCHE_PROXY_ADMIN_PORT:-7081}
aio_proxy_default='http://{port}-{id}.'$AIO_DOMAIN
[[ $AIO_PROXY_PORT == 80 ]] || aio_proxy_default+=":$AIO_PROXY_PORT"
AIO_PROXY_URL=${CLOCHE_PROXY_URL:-$aio_proxy_default}
AIO_PROXY_ADMIN=http://127.0.0.1:$AIO_PROXY_ADMIN_PORT
AIO_NODE_SOCK=$AIO_RUN/node.sock
AIO_RUNSC_ROOT=${CLOCHE_RUNSC_ROOT:-/run/cloche/runsc}
AIO_URL=http://127.0.0.1:$AIO_PORTAL_PORT
AIO_NODE_URL=http://127.0.0.1:$AIO_NODE_PORT

aio_say() { echo "cloche: $*" >&2; }

# aio_alive NAME: the daemon of pid file NAME.pid runs.
aio_alive() {
	local f=$AIO_RUN/$1.pid
	[[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# aio_stop_daemon NAME: SIGTERM, wait up to 15 s, then SIGKILL.
aio_stop_daemon() {
	local f=$AIO_RUN/$1.pid pid i
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	if kill -TERM "$pid" 2>/dev/null; then
		for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

# aio_wait_http URL SECONDS: until URL answers 200.
aio_wait_http() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		curl -sf -o /dev/null "$1" && return 0
		sleep 0.1
	done
	return 1
}

aio_key() { sed -n 's/^CLOCHE_API_KEY=//p' "$AIO_ENV" 2>/dev/null; }
aio_cred() { cat "$AIO_ETC/node.cred"; }

# aio_api METHOD PATH [BODY]: the portal with the admin key; prints the body.
aio_api() {
	curl -sS -m 600 -X "$1" -H "Authorization: Bearer $(aio_key)" \
		${3:+-H 'Content-Type: application/json' --data-binary "$3"} "$AIO_URL$2"
}

# aio_node METHOD PATH: the node agent's API with the node credential.
aio_node() {
	curl -sS -m 120 -X "$1" -H "Authorization: Bearer $(aio_cred)" "$AIO_NODE_URL$2"
}
