/* cloche-portal: leases sandboxes to clients over a REST API and places
 * them on node agents.  Thin main: options, the store, the loop, signals;
 * the work is in pt_api (HTTP), pt_core (acquire, queue, leases),
 * pt_reconcile (heartbeats), pt_nodes (placement) and pt_store (SQLite).
 *
 *	cloche-portal --node-credential-file F [--db PATH] ...   serve
 *	cloche-portal [--db PATH] key-create NAME [admin|user]    print a new key */
#include "portal/pt_api.h"
#include "portal/pt_core.h"
#include "portal/pt_mcp.h"
#include "portal/pt_nodes.h"
#include "portal/pt_thumb.h"
#include "mcp/lib/mcp.h"

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
#include <sys/signalfd.h>
#include <unistd.h>

static const struct cfg_opt opts[] = {
	{"listen", CFG_STR, "127.0.0.1", "address of the API"},
	{"port", CFG_INT, "7000", "port of the API"},
	{"allowed-hosts", CFG_STR, "",
	 "names clients use to reach the portal (comma-separated, `*.suffix` allowed): "
	 "/mcp accepts them in Host and Origin besides localhost and the listen address"},
	{"db", CFG_STR, "/var/lib/cloche-portal/portal.db", "SQLite database (made when missing)"},
	{"token-key-file", CFG_STR, "/var/lib/cloche-portal/token.key",
	 "key of the sandbox tokens (made when missing; the proxy reads it too)"},
	{"node-credential-file", CFG_STR, NULL,
	 "file holding the node credential (nodes heartbeat with it, the portal calls them with it)"},
	{"proxy-url", CFG_STR, "http://{port}-{id}.cloche.localhost",
	 "URL of a sandbox port through the proxy; {port} and {id} are replaced"},
	{"default-template", CFG_STR, "desktop", "template of an acquire that names none"},
	{"ttl-default", CFG_DURATION, "10m", "lease of an acquire that gives no ttl"},
	{"ttl-max", CFG_DURATION, "24h", "longest lease (acquire and keepalive)"},
	{"wait-default", CFG_DURATION, "120s", "how long an acquire waits for room by default"},
	{"wait-max", CFG_DURATION, "10m", "longest wait an acquire may ask for"},
	{"queue-max", CFG_INT, "256", "acquires that may wait for room at once"},
	{"best-of", CFG_INT, "2", "K of best-of-K placement: nodes sampled per placement"},
	{"node-timeout", CFG_DURATION, "10s",
	 "a node silent this long is down: its sandboxes are lost"},
	{"heartbeat-interval", CFG_DURATION, "2s", "heartbeat interval nodes are told to use"},
	{"memory-default-mb", CFG_INT, "2048", "memory of a sandbox (the node's default)"},
	{"cpus-default", CFG_INT, "1", "CPUs of a sandbox (the node's default)"},
	{"pids-default", CFG_INT, "1024", "processes of a sandbox (the node's default)"},
	{"memory-max-mb", CFG_INT, "16384", "most memory an acquire may ask for"},
	{"cpus-max", CFG_INT, "8", "most CPUs an acquire may ask for"},
	{"pids-max", CFG_INT, "32768", "most processes an acquire may ask for"},
	{"idle-timeout-default", CFG_DURATION, "0",
	 "hibernate a ready sandbox idle this long (no proxied traffic, low CPU); 0 = never"},
	{"offload-after-default", CFG_DURATION, "0",
	 "offload a sandbox hibernated this long to S3; 0 = never"},
	{"hibernate-policy", CFG_STR, "",
	 "per template defaults: 'desktop:idle=10m,offload=1h;mini:idle=30s'"},
	{"offload-retention", CFG_DURATION, "7d",
	 "delete (and release) what was offloaded longer than this; 0 = keep"},
	{"idle-cpu-percent", CFG_INT, "10",
	 "a sandbox using less of one CPU than this (between heartbeats) counts as idle"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

static struct pt_portal portal;

/* Ends the loop once the MCP tool calls have finished (they are answered
 * by the loop), or after 3 s. */
static void stop_loop(void *ud)
{
	struct pt_portal *p = ud;

	if (p->mcp && mcp_server_calls(p->mcp) && pt_now_ms() < p->stop_deadline) {
		hsrv_timer_arm(p->stop_timer, 50);
		return;
	}
	hsrv_stop(p->srv);
}

static int on_signal(void *ud, int fd)
{
	struct pt_portal *p = ud;
	struct signalfd_siginfo si;

	if (fd < 0)
		return -1;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		log_info("shutting down; sandboxes and leases stay", "{s:s}", "signal",
			 strsignal((int)si.ssi_signo));
		p->stopping = true;
		job_set_stop(p->jobs);
		pt_core_stop(p);
		if (p->mcp)
			mcp_server_stop(p->mcp);
		p->stop_deadline = pt_now_ms() + 3000;
		/* A moment for the answers just queued (503 to waiting acquires)
		 * to leave before the loop ends. */
		if (!p->stop_timer) {
			p->stop_timer = hsrv_timer_new(p->srv, stop_loop, p);
			if (p->stop_timer)
				hsrv_timer_arm(p->stop_timer, 300);
			else
				hsrv_stop(p->srv);
		}
	}
	return 0;
}

static int key_create(struct cfg *c, char *const *args, size_t nargs)
{
	struct err e = ERR_INIT;
	struct pt_store *st;
	char key[PT_KEY_MAX];
	const char *role = nargs >= 3 ? args[2] : "user";

	if (nargs < 2 || nargs > 3) {
		fprintf(stderr, "usage: cloche-portal [--db PATH] key-create NAME [admin|user]\n");
		return 2;
	}
	if (util_mkdir_parents(cfg_str(c, "db"), 0700) == -1) {
		fprintf(stderr, "cloche-portal: mkdir for %s: %s\n", cfg_str(c, "db"), strerror(errno));
		return 1;
	}
	st = pt_store_open(cfg_str(c, "db"), &e);
	if (!st || pt_auth_key_create(st, args[1], role, key, NULL, &e) == -1) {
		fprintf(stderr, "cloche-portal: key-create: %s\n", e.msg);
		pt_store_close(st);
		return 1;
	}
	pt_store_close(st);
	printf("%s\n", key);
	explicit_bzero(key, sizeof(key));
	return 0;
}

static void load_cfg(struct pt_portal *p, struct cfg *c)
{
	struct pt_cfg *k = &p->cfg;
	struct err e = ERR_INIT;
	int n;

	k->ttl_default_s = cfg_duration_ms(c, "ttl-default") / 1000;
	k->ttl_max_s = cfg_duration_ms(c, "ttl-max") / 1000;
	k->wait_default_s = cfg_duration_ms(c, "wait-default") / 1000;
	k->wait_max_s = cfg_duration_ms(c, "wait-max") / 1000;
	k->queue_max = (int)cfg_int(c, "queue-max");
	k->best_k = (int)cfg_int(c, "best-of");
	k->node_timeout_ms = cfg_duration_ms(c, "node-timeout");
	k->heartbeat_ms = cfg_duration_ms(c, "heartbeat-interval");
	k->mem_default_mb = cfg_int(c, "memory-default-mb");
	k->cpus_default = cfg_int(c, "cpus-default");
	k->pids_default = cfg_int(c, "pids-default");
	k->mem_max_mb = cfg_int(c, "memory-max-mb");
	k->cpus_max = cfg_int(c, "cpus-max");
	k->pids_max = cfg_int(c, "pids-max");
	if (k->ttl_default_s < 1 || k->ttl_max_s < k->ttl_default_s || k->wait_max_s < 0 ||
	    k->wait_default_s > k->wait_max_s || k->queue_max < 0 || k->queue_max > 100000 ||
	    k->best_k < 1 || k->best_k > 64 || k->node_timeout_ms < 1000 ||
	    k->heartbeat_ms < 200 || k->heartbeat_ms * 2 > k->node_timeout_ms ||
	    k->mem_default_mb > k->mem_max_mb || k->cpus_default > k->cpus_max ||
	    k->pids_default > k->pids_max) {
		err_set(&e, 0,
			"inconsistent limits: need 1 <= ttl-default <= ttl-max, wait-default <= "
			"wait-max, 1 <= best-of <= 64, heartbeat-interval >= 200ms and at most half "
			"of node-timeout (>= 1s), defaults within the maxima");
		daemon_die(1, "bad configuration", &e);
	}
	k->policy.idle_s = cfg_duration_ms(c, "idle-timeout-default") / 1000;
	k->policy.offload_s = cfg_duration_ms(c, "offload-after-default") / 1000;
	k->offload_retention_s = cfg_duration_ms(c, "offload-retention") / 1000;
	k->idle_cpu_pct = cfg_int(c, "idle-cpu-percent");
	if (pt_policy_parse(&k->policy, cfg_str(c, "hibernate-policy"), &e) == -1) {
		err_wrap(&e, "--hibernate-policy");
		daemon_die(1, "bad configuration", &e);
	}
	if (k->idle_cpu_pct < 0 || k->idle_cpu_pct > 10000) {
		err_set(&e, 0, "--idle-cpu-percent must be 0..10000");
		daemon_die(1, "bad configuration", &e);
	}
	if (strlen(cfg_str(c, "proxy-url")) >= sizeof(k->proxy_url) ||
	    !strstr(cfg_str(c, "proxy-url"), "{port}") || !strstr(cfg_str(c, "proxy-url"), "{id}")) {
		err_set(&e, 0, "--proxy-url must contain {port} and {id}");
		daemon_die(1, "bad configuration", &e);
	}
	snprintf(k->proxy_url, sizeof(k->proxy_url), "%s", cfg_str(c, "proxy-url"));
	snprintf(k->default_template, sizeof(k->default_template), "%s",
		 cfg_str(c, "default-template"));
	if (!cfg_str(c, "node-credential-file")) {
		err_set(&e, 0, "--node-credential-file is required");
		daemon_die(1, "bad configuration", &e);
	}
	n = secret_read_file(cfg_str(c, "node-credential-file"), k->node_cred,
			     sizeof(k->node_cred), 16, &e);
	if (n < 0)
		daemon_die(1, e.code ? "cannot read the node credential" : "bad configuration", &e);
	k->node_cred_len = (size_t)n;
	n = sbtoken_key_load(cfg_str(c, "token-key-file"), true, k->token_key, sizeof(k->token_key),
			     &e);
	if (n < 0)
		daemon_die(1, "cannot load the token key", &e);
	k->token_key_len = (size_t)n;
}

static const struct daemon_cmd commands[] = {
	{"key-create", "NAME [admin|user]", key_create},
};

static const struct daemon_opts start = {
	.prog = "cloche-portal",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_PORTAL",
	.cmds = commands,
	.ncmds = ARRAY_LEN(commands),
	.signals = DAEMON_SIG_FD,
};

int main(int argc, char **argv)
{
	struct pt_portal *p = &portal;
	struct err e = ERR_INIT;
	struct hsrv_opts ho = {0};
	struct daemon d;
	struct cfg *c;
	int rc;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	load_cfg(p, c);

	if (util_mkdir_parents(cfg_str(c, "db"), 0700) == -1) {
		err_set(&e, errno, "mkdir for `%s`", cfg_str(c, "db"));
		daemon_die(1, "cannot open the database", &e);
	}
	p->st = pt_store_open(cfg_str(c, "db"), &e);
	if (!p->st)
		daemon_die(1, "cannot open the database", &e);
	p->started_at = pt_now_ms();
	ho.listen = cfg_str(c, "listen");
	ho.port = (int)cfg_int(c, "port");
	ho.max_body = 16u << 20; /* heartbeats of big nodes; the API bounds its own bodies */
	p->srv = hsrv_new(&ho, &e);
	if (!p->srv)
		daemon_die(1, "cannot listen", &e);
	p->jobs = job_set_new(p->srv);
	if (!p->jobs) {
		err_set(&e, ENOMEM, "node calls");
		daemon_die(1, "cannot start", &e);
	}
	if (hsrv_watch(p->srv, take_fd(&d.sigfd), on_signal, p, &e) == -1 ||
	    pt_api_routes(p, &e) == -1 || pt_core_start(p, &e) == -1)
		daemon_die(1, "cannot start", &e);
	{
		char *hosts = NULL;

		if (asprintf(&hosts, "%s,%s", ho.listen, cfg_str(c, "allowed-hosts")) < 0 ||
		    pt_mcp_start(p, ho.listen, hosts, &e) == -1)
			daemon_die(1, "cannot start the MCP server", &e);
		p->mcp_hosts = hosts; /* the server keeps pointing at it */
	}
	if (pt_store_key_admins(p->st, &e) == 0)
		log_warn("no admin key exists: make one with `cloche-portal key-create NAME admin`",
			 NULL);
	log_info("serving", "{s:s, s:i, s:s, s:i, s:s}", "listen", ho.listen, "port",
		 hsrv_port(p->srv), "db", cfg_str(c, "db"), "schema", pt_store_version(p->st),
		 "version", version_string());
	rc = hsrv_run(p->srv);

	/* Node calls in flight get a few seconds; their answers are not used
	 * (the next start reconciles with what the nodes report). */
	p->stopping = true;
	job_set_stop(p->jobs);
	{
		int left = job_set_wait(p->jobs, 5000);

		if (left > 0) {
			log_warn("stopped with node calls in flight; the next start reconciles them",
				 "{s:i}", "calls", left);
			fflush(NULL);
			_exit(rc == 0 ? 0 : 1);
		}
	}
	pt_core_stop(p);
	pt_core_free(p);
	pt_thumb_free_all(p);
	mcp_server_free(p->mcp);
	free(p->mcp_hosts);
	hsrv_timer_free(p->stop_timer);
	job_set_free(p->jobs, JOB_DRAIN_DROP); /* answers the loop did not run */
	hsrv_free(p->srv);
	pt_nodes_free(p);
	pt_store_close(p->st);
	daemon_end(&d);
	log_info("stopped", NULL);
	return rc == 0 ? 0 : 1;
}
