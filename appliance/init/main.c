/* cloche-init: PID 1 of every sandbox.  Reads the service table, serves
 * health on 8080 and hands everything else to the supervisor.  Signals
 * arrive through a signalfd on the same event loop as HTTP. */
#include "config.h"
#include "supervisor.h"
#include "spawn.h"

#include "common/http_server.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <getopt.h>
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
};

static void health(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct init *in = ud;
	int ready = sup_all_ready(in->sup);

	(void)req;
	hsrv_resp_json(resp, ready ? 200 : 503,
		       json_pack("{s:s, s:I, s:o}", "status", ready ? "ready" : "starting",
				 "uptime_ms", (json_int_t)(util_now_ms() - in->boot_ms),
				 "services", sup_status(in->sup)));
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

static void usage(FILE *f)
{
	fprintf(f, "usage: cloche-init [--config FILE] [--health-port N] [--health-listen ADDR]\n"
		   "                   [--log-level debug|info|warn|error] [--check]\n"
		   "Starts and supervises the sandbox's services; health JSON on --health-port.\n"
		   "Environment: CLOCHE_INIT_CONFIG, CLOCHE_HEALTH_PORT, CLOCHE_LOG_LEVEL.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"health-port", required_argument, NULL, 'p'},
		{"health-listen", required_argument, NULL, 'l'},
		{"log-level", required_argument, NULL, 'v'},
		{"check", no_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *config = getenv("CLOCHE_INIT_CONFIG");
	const char *port_s = getenv("CLOCHE_HEALTH_PORT");
	const char *level_s = getenv("CLOCHE_LOG_LEVEL");
	const char *listen = NULL;
	struct init_config cfg;
	struct init in = {.boot_ms = util_now_ms()};
	struct err e = ERR_INIT;
	int check_only = 0, c, level, sfd;
	long port;
	sigset_t set;

	log_init("cloche-init", LOG_INFO, 2);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'p': port_s = optarg; break;
		case 'l': listen = optarg; break;
		case 'v': level_s = optarg; break;
		case 'k': check_only = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "cloche-init: unexpected argument `%s`\n", argv[optind]);
		return 2;
	}
	level = log_level_parse(level_s ? level_s : "info");
	port = strtol(port_s ? port_s : "8080", NULL, 10);
	if (level < 0 || port < 0 || port > 65535) {
		fprintf(stderr, "cloche-init: bad --log-level or --health-port\n");
		return 2;
	}
	log_init("cloche-init", (enum log_level)level, 2);
	if (!config)
		config = "/opt/cloche/etc/init.json";
	if (init_config_load(config, &cfg, &e)) {
		log_error("bad configuration", "{s:s}", "error", e.msg);
		return 1;
	}
	if (check_only) {
		printf("%s: %zu services\n", config, cfg.nsvc);
		init_config_free(&cfg);
		return 0;
	}

	/* As PID 1 orphans come to us anyway; elsewhere (tests) ask for them. */
	if (getpid() != 1)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	spawn_signal_set(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	in.srv = hsrv_new(&(struct hsrv_opts){.listen = listen, .port = (int)port, .max_body = 4096}, &e);
	if (sfd == -1 || !in.srv || !(in.sup = sup_new(&cfg, in.srv, &e)) ||
	    hsrv_route(in.srv, "GET", "/health", health, &in, &e) ||
	    hsrv_route(in.srv, "GET", "/", health, &in, &e) ||
	    hsrv_watch(in.srv, sfd, on_signal, &in, &e)) {
		log_error("cannot start", "{s:s}", "error", sfd == -1 ? strerror(errno) : e.msg);
		return 1;
	}
	log_info("cloche-init up", "{s:i, s:s, s:i}", "pid", (int)getpid(), "config", config,
		 "health_port", hsrv_port(in.srv));
	sup_start(in.sup);
	if (hsrv_run(in.srv))
		log_error("event loop failed", NULL);

	/* Anything still alive (strays outside every service's group) goes now. */
	if (getpid() == 1) {
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
	}
	hsrv_free(in.srv);
	sup_free(in.sup);
	init_config_free(&cfg);
	log_info("cloche-init exiting", NULL);
	return 0;
}
