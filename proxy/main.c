/* cloche-proxy: routes {port}-{id}.{domain} to that port of that sandbox.
 * Thin main: options, the route table, the workers, signals; the work is
 * in px_conn (connections), px_worker (event loops), px_route (where
 * sandboxes are), px_head/px_rewrite/px_chunk (HTTP) and px_admin.
 *
 *	cloche-proxy [--portal URL --node-credential-file F] ...   serve
 *	cloche-proxy [--token-key-file F] token ID                  print a sandbox token */
#include "proxy/px_conn.h"
#include "proxy/px_proxy.h"
#include "proxy/px_worker.h"
#include "proxy/px_worker_loop.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/sbtoken.h"
#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const struct cfg_opt opts[] = {
	{"listen", CFG_STR, "127.0.0.1", "addresses to serve sandboxes on (comma-separated)"},
	{"port", CFG_INT, "80", "port to serve sandboxes on"},
	{"domain", CFG_STR, "cloche.localhost", "sandbox names are {port}-{id}.<domain>"},
	{"admin-listen", CFG_STR, "127.0.0.1", "addresses of the admin endpoints (comma-separated)"},
	{"admin-port", CFG_INT, "7081", "port of the admin endpoints (0: none)"},
	{"workers", CFG_INT, "0", "event-loop threads (0: one per CPU)"},
	{"portal", CFG_STR, "", "portal URL (none: every sandbox is taken to be on this node)"},
	{"node-credential-file", CFG_STR, NULL,
	 "file holding the node credential (for the portal and the admin endpoints)"},
	{"node-name", CFG_STR, NULL, "this node's name at the portal (default: the host name)"},
	{"advertise", CFG_STR, NULL,
	 "host:port other nodes' proxies reach this one at (default: listen:port)"},
	{"node-socket", CFG_STR, "/run/cloche/node.sock", "the node agent's port-connect socket"},
	{"token-key-file", CFG_STR, "/var/lib/cloche-portal/token.key",
	 "key of the sandbox tokens (the portal's)"},
	{"static-routes", CFG_STR, "",
	 "id=ip:port,... sent to a fixed address instead of a sandbox (benchmarks)"},
	{"trusted-peers", CFG_STR, "",
	 "addresses (other nodes' proxies) whose X-Forwarded-For/Proto are believed"},
	{"head-max", CFG_SIZE, "16K", "largest request head"},
	{"head-timeout", CFG_DURATION, "10s", "time to send a whole request head"},
	{"idle-timeout", CFG_DURATION, "75s", "keep-alive connection idle between requests"},
	{"read-timeout", CFG_DURATION, "5m", "silence in the middle of an exchange"},
	{"tunnel-timeout", CFG_DURATION, "1h", "silence on a WebSocket"},
	{"connect-timeout", CFG_DURATION, "10s", "to get a connection into a sandbox"},
	{"wait-timeout", CFG_DURATION, "60s", "holding a request while its sandbox starts or wakes"},
	{"upstream-idle", CFG_DURATION, "30s", "a kept connection into a sandbox"},
	{"drain-timeout", CFG_DURATION, "10s", "on SIGTERM, for exchanges and tunnels to end"},
	{"route-ttl", CFG_DURATION, "30s", "a route is asked again after this (changes come sooner)"},
	{"report-interval", CFG_DURATION, "5s", "activity reports to the portal"},
	{"max-conns-sandbox", CFG_INT, "4096", "client connections per sandbox"},
	{"max-conns-client", CFG_INT, "4096", "client connections per client address"},
	{"max-conns", CFG_INT, "100000", "client connections in all"},
	{"tls-cert", CFG_STR, NULL,
	 "PEM certificate chain (a wildcard for *.<domain>): serve HTTPS (default: plain HTTP)"},
	{"tls-key", CFG_STR, NULL, "PEM private key of --tls-cert"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

static struct px_proxy proxy;
static char credential[512];
static unsigned char token_key[256];

static void wake_all(void *ud)
{
	struct px_proxy *p = ud;

	for (int i = 0; i < p->nworkers; i++)
		px_worker_poke(p->w[i]);
}

static int print_token(struct cfg *c, char *const *args, size_t nargs)
{
	struct err e = ERR_INIT;
	char tok[SBTOKEN_MAX];
	int n;

	if (nargs != 2) {
		fprintf(stderr, "usage: cloche-proxy [--token-key-file F] token SANDBOX-ID\n");
		return 2;
	}
	n = sbtoken_key_load(cfg_str(c, "token-key-file"), false, token_key, sizeof(token_key), &e);
	if (n < 0 || sbtoken_make(token_key, (size_t)n, args[1], tok, sizeof(tok), &e) == -1) {
		fprintf(stderr, "cloche-proxy: token: %s\n", e.msg);
		return 1;
	}
	printf("%s\n", tok);
	return 0;
}

static void settings(struct px_proxy *p, struct cfg *c)
{
	struct px_settings *s = &p->s;
	struct err e = ERR_INIT;
	int n;

	s->domain = cfg_str(c, "domain");
	s->listen = cfg_str(c, "listen");
	s->port = (int)cfg_int(c, "port");
	s->admin_listen = cfg_str(c, "admin-listen");
	s->admin_port = (int)cfg_int(c, "admin-port");
	s->workers = (int)cfg_int(c, "workers");
	if (s->workers <= 0)
		s->workers = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (s->workers <= 0 || s->workers > 64)
		s->workers = s->workers > 64 ? 64 : 1;
	s->head_max = cfg_size(c, "head-max");
	s->head_timeout_ms = (int)cfg_duration_ms(c, "head-timeout");
	s->idle_timeout_ms = (int)cfg_duration_ms(c, "idle-timeout");
	s->read_timeout_ms = (int)cfg_duration_ms(c, "read-timeout");
	s->tunnel_timeout_ms = (int)cfg_duration_ms(c, "tunnel-timeout");
	s->connect_timeout_ms = (int)cfg_duration_ms(c, "connect-timeout");
	s->wait_timeout_ms = (int)cfg_duration_ms(c, "wait-timeout");
	s->upstream_idle_ms = (int)cfg_duration_ms(c, "upstream-idle");
	s->drain_timeout_ms = (int)cfg_duration_ms(c, "drain-timeout");
	s->max_conns_sandbox = (int)cfg_int(c, "max-conns-sandbox");
	s->max_conns_client = (int)cfg_int(c, "max-conns-client");
	s->max_conns = (int)cfg_int(c, "max-conns");
	s->node_socket = cfg_str(c, "node-socket");
	s->trusted_peers = cfg_str(c, "trusted-peers");
	if (s->port < 1 || s->port > 65535 || s->admin_port < 0 || s->admin_port > 65535 ||
	    s->head_max < 1024 || s->head_max > PX_BLOCK / 2 || s->head_timeout_ms < 100 ||
	    s->max_conns_sandbox < 1 || s->max_conns_client < 1 || s->max_conns < 1 ||
	    !*s->domain || strchr(s->domain, '/') || s->domain[0] == '.') {
		err_set(&e, 0, "need a port in 1..65535, 1K <= head-max <= %dK, head-timeout >= "
			"100ms, limits >= 1, and a domain like `cloche.example.com`", PX_BLOCK / 2048);
		daemon_die(1, "bad configuration", &e);
	}
	if (cfg_str(c, "node-credential-file")) {
		if (secret_read_file(cfg_str(c, "node-credential-file"), credential,
				     sizeof(credential), 16, &e) < 0)
			daemon_die(1, e.code ? "cannot read the node credential" : "bad configuration",
				   &e);
		s->credential = credential;
	} else if (*cfg_str(c, "portal")) {
		err_set(&e, 0, "--portal needs --node-credential-file");
		daemon_die(1, "bad configuration", &e);
	}
	n = sbtoken_key_load(cfg_str(c, "token-key-file"), false, token_key, sizeof(token_key), &e);
	if (n < 0)
		daemon_die(1, "cannot load the token key", &e);
	s->token_key = token_key;
	if (!cfg_str(c, "tls-cert") != !cfg_str(c, "tls-key")) {
		err_set(&e, 0, "--tls-cert and --tls-key go together");
		daemon_die(1, "bad configuration", &e);
	}
	if (cfg_str(c, "tls-cert")) {
		s->tls = px_tls_new(cfg_str(c, "tls-cert"), cfg_str(c, "tls-key"), &e);
		if (!s->tls)
			daemon_die(1, "cannot load the TLS certificate", &e);
	}
	s->token_key_len = (size_t)n;
}

/* Room for many connections: two descriptors each, plus some. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static const struct daemon_cmd commands[] = {
	{"token", "SANDBOX-ID", print_token},
};

/* The workers wait on their own event loops: main takes the signals with
 * sigwaitinfo(), and the workers inherit the mask that keeps them out. */
static const struct daemon_opts start = {
	.prog = "cloche-proxy",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_PROXY",
	.cmds = commands,
	.ncmds = ARRAY_LEN(commands),
	.signals = DAEMON_SIG_BLOCK,
};

int main(int argc, char **argv)
{
	struct px_proxy *p = &proxy;
	struct err e = ERR_INIT;
	struct px_route_cfg rc = {0};
	char host[256] = "", advertise[300];
	struct daemon d;
	struct cfg *c;
	siginfo_t si;
	int r;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	settings(p, c);
	raise_nofile();
	pthread_mutex_init(&p->addr_mu, NULL);

	gethostname(host, sizeof(host) - 1);
	snprintf(advertise, sizeof(advertise), "%.*s:%d", (int)strcspn(p->s.listen, ","),
		 p->s.listen, p->s.port);
	rc.portal = cfg_str(c, "portal");
	rc.credential = p->s.credential;
	rc.node_name = cfg_str(c, "node-name") ? cfg_str(c, "node-name") : host;
	rc.advertise = cfg_str(c, "advertise") ? cfg_str(c, "advertise") : advertise;
	rc.node_socket = p->s.node_socket;
	rc.static_routes = cfg_str(c, "static-routes");
	rc.ttl_ms = (int)cfg_duration_ms(c, "route-ttl");
	rc.report_ms = (int)cfg_duration_ms(c, "report-interval");
	p->routes = px_routes_new(&rc, wake_all, p, &e);
	if (!p->routes)
		daemon_die(1, "bad configuration", &e);
	p->w = calloc((size_t)p->s.workers, sizeof(*p->w));
	if (!p->w)
		daemon_die(1, "out of memory", &e);
	for (int i = 0; i < p->s.workers; i++) {
		p->w[i] = px_worker_new(p, i, &e);
		if (!p->w[i])
			daemon_die(1, "cannot listen", &e);
		p->nworkers++;
	}
	if (px_routes_start(p->routes, &e) == -1)
		daemon_die(1, "cannot start", &e);
	for (int i = 0; i < p->nworkers; i++)
		if (px_worker_start(p->w[i], &e) == -1)
			daemon_die(1, "cannot start", &e);
	log_info("serving", "{s:s, s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s}", "listen", p->s.listen,
		 "port", p->s.port, "scheme", p->s.tls ? "https" : "http", "domain", p->s.domain,
		 "admin_port", p->s.admin_port, "workers", p->nworkers, "portal",
		 *rc.portal ? rc.portal : "(none)", "node", rc.node_name, "version",
		 version_string());

	do
		r = sigwaitinfo(&d.mask, &si);
	while (r == -1 && errno == EINTR);
	log_info("shutting down: no new connections, exchanges in flight finish", "{s:s, s:i}",
		 "signal", strsignal(si.si_signo), "drain_ms", p->s.drain_timeout_ms);
	atomic_store(&p->stopping, true);
	wake_all(p);
	for (int i = 0; i < p->nworkers; i++)
		px_worker_join(p->w[i]);
	px_routes_free(p->routes);
	px_tls_free(p->s.tls);
	free(p->w);
	daemon_end(&d);
	log_info("stopped", NULL);
	return 0;
}
