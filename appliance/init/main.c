/* cloche-init: PID 1 of every sandbox.  Reads the service table, serves
 * health on 8080 and hands everything else to the supervisor.  Signals
 * arrive through a signalfd on the same event loop as HTTP. */
#include "config.h"
#include "memguard.h"
#include "netcheck.h"
#include "supervisor.h"
#include "spawn.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/http_server.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

struct init {
	struct sup *sup;
	struct hsrv *srv;
	uint64_t boot_ms;
	struct memguard guard;
	struct hsrv_timer *guard_tick;
	int guard_ms;
};

static void guard_step(void *ud)
{
	struct init *in = ud;

	if (memguard_check(&in->guard, util_now_ms()) == -1) {
		log_warn("memory guard off: cannot read meminfo", "{s:s}", "proc", in->guard.proc);
		return;
	}
	hsrv_timer_arm(in->guard_tick, (uint64_t)in->guard_ms);
}

static void health(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct init *in = ud;
	int ready = sup_all_ready(in->sup);

	(void)req;
	hsrv_resp_json(resp, ready ? 200 : 503,
		       json_pack("{s:s, s:I, s:o, s:s}", "status", ready ? "ready" : "starting",
				 "uptime_ms", (json_int_t)(util_now_ms() - in->boot_ms),
				 "services", sup_status(in->sup), "version", version_string()));
}

/* GET /connections: the sandbox's TCP connections through its interface
 * (netcheck.h), without the one asking.  The node agent asks right before
 * a checkpoint and closes this connection with a reset, so it leaves no
 * TIME_WAIT behind in here. */
static void connections(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	struct init *in = ud;
	json_t *list = json_array();
	int count = 0;
	static char text[1 << 20];

	for (size_t t = 0; t < ARRAY_LEN(tables); t++) {
		AUTOCLOSE int fd = open(tables[t], O_RDONLY | O_CLOEXEC);
		size_t got = 0;
		ssize_t r;

		if (fd == -1)
			continue;
		while (got < sizeof(text) - 1 &&
		       (r = read(fd, text + got, sizeof(text) - 1 - got)) > 0)
			got += (size_t)r;
		text[got] = '\0';
		count += netcheck_scan(text, hsrv_port(in->srv), hsrv_req_peer_port(req), list);
	}
	hsrv_resp_json(resp, 200, json_pack("{s:i, s:o}", "open", count, "connections", list));
}

static int on_signal(void *ud, int fd)
{
	struct init *in = ud;
	struct signalfd_siginfo si;

	if (fd < 0)
		return -1;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			sup_reap(in->sup);
		} else {
			log_info("shutdown requested", "{s:s}", "signal", strsignal((int)si.ssi_signo));
			sup_shutdown(in->sup);
		}
	}
	return 0;
}

static const struct cfg_opt init_opts[] = {
	{"services", CFG_STR, "/opt/cloche/etc/init.json", "the service table (JSON)"},
	{"health-port", CFG_INT, "8080", "port of the health endpoint; 0 picks one"},
	{"health-listen", CFG_STR, NULL, "address of the health endpoint (default: all)"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
	{"check", CFG_BOOL, "false", "validate the service table and exit"},
	{"memory-reserve-mb", CFG_INT, "0",
	 "kill the largest process when available memory falls below this; 0: guard off"},
	{"memory-check-ms", CFG_INT, "100", "how often the memory guard looks"},
};

/* daemon_start() only ignores SIGPIPE here: as PID 1, init reads SIGCHLD
 * and SIGHUP besides SIGTERM and SIGINT through its signalfd, a set
 * spawn_signal_set() keeps next to the code that starts the services.  A
 * bad flag exits 2, a bad service table 1 (test-init-host.sh). */
static const struct daemon_opts start = {
	.prog = "cloche-init",
	.opts = init_opts,
	.nopts = ARRAY_LEN(init_opts),
	.env_prefix = "CLOCHE",
	.usage_status = 2,
};

extern char **environ;

/* Overwrites the value of every *_SECRET variable of this process's
 * environment with zero bytes, where /proc/PID/environ reads it. */
static void scrub_secrets(void)
{
	for (char **e = environ; e && *e; e++) {
		char *eq = strchr(*e, '=');
		size_t nl = eq ? (size_t)(eq - *e) : 0;

		if (eq && nl > 7 && memcmp(eq - 7, "_SECRET", 7) == 0)
			explicit_bzero(eq + 1, strlen(eq + 1));
	}
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct cfg *opts;
	struct init_config cfg;
	struct init in = {.boot_ms = util_now_ms()};
	struct err e = ERR_INIT;
	const char *services;
	long long port;
	int sfd;
	sigset_t set;

	daemon_start(&start, argc, argv, &d);
	opts = d.cfg;
	port = cfg_int(opts, "health-port");
	services = cfg_str(opts, "services");
	in.guard_ms = (int)cfg_int(opts, "memory-check-ms");
	in.guard.reserve_kb = cfg_int(opts, "memory-reserve-mb") * 1024;
	snprintf(in.guard.proc, sizeof(in.guard.proc), "/proc");
	if (port < 0 || port > 65535 || in.guard.reserve_kb < 0 || in.guard_ms < 10 ||
	    in.guard_ms > 60000) {
		err_set(&e, 0, "bad --health-port, --memory-reserve-mb or --memory-check-ms");
		daemon_die(2, "bad configuration", &e);
	}
	if (init_config_load(services, &cfg, &e)) {
		daemon_die(1, "bad service table", &e);
	}
	/* The services' environments are built: the secrets among ours
	 * (CLOCHE_VNC_SECRET, handed to cloche-vnc alone) are wiped in place,
	 * since gVisor lets every user read /proc/1/environ. */
	scrub_secrets();
	if (cfg_bool(opts, "check")) {
		printf("%s: %zu services\n", services, cfg.nsvc);
		init_config_free(&cfg);
		daemon_end(&d);
		return 0;
	}

	/* As PID 1 orphans come to us anyway; elsewhere (tests) ask for them. */
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	spawn_signal_set(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd == -1) {
		err_set(&e, errno, "signalfd");
		daemon_die(1, "cannot start", &e);
	}
	in.srv = hsrv_new(&(struct hsrv_opts){.listen = cfg_str(opts, "health-listen"), .port = (int)port,
					       .max_body = 4096},
			  &e);
	/* The ports people and the node reach are init's, for good: bound
	 * before any service runs, so no process of the sandbox ever finds
	 * one free (docs/security.md). */
	if (init_dirs_make(&cfg, &e) || init_listen_open(&cfg, &e))
		daemon_die(1, "cannot start", &e);
	if (!in.srv || !(in.sup = sup_new(&cfg, in.srv, &e)) ||
	    hsrv_route(in.srv, "GET", "/health", health, &in, &e) ||
	    hsrv_route(in.srv, "GET", "/connections", connections, &in, &e) ||
	    hsrv_route(in.srv, "GET", "/", health, &in, &e) ||
	    hsrv_watch(in.srv, sfd, on_signal, &in, &e))
		daemon_die(1, "cannot start", &e);
	if (in.guard.reserve_kb > 0) {
		in.guard_tick = hsrv_timer_new(in.srv, guard_step, &in);
		if (!in.guard_tick) {
			err_set(&e, 0, "memory guard timer");
			daemon_die(1, "cannot start", &e);
		}
		hsrv_timer_arm(in.guard_tick, (uint64_t)in.guard_ms);
	}
	log_info("cloche-init up", "{s:i, s:s, s:i, s:I, s:s}", "pid", (int)getpid(), "services",
		 services, "health_port", hsrv_port(in.srv), "memory_reserve_kb",
		 (json_int_t)in.guard.reserve_kb, "version", version_string());
	sup_start(in.sup);
	if (hsrv_run(in.srv))
		log_error("event loop failed", NULL);

	/* Anything still alive (strays outside every service's group) goes now. */
	if (getpid() == 1) {
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
	}
	hsrv_timer_free(in.guard_tick);
	hsrv_free(in.srv);
	sup_free(in.sup);
	init_config_free(&cfg);
	daemon_end(&d);
	log_info("cloche-init exiting", NULL);
	return 0;
}
