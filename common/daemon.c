/* A daemon's start-up; see daemon.h.  The order matters and is the one the
 * programs had: the logger first (so even a bad flag is a JSON line), the
 * configuration, its log level, sub-commands (which must not run with
 * SIGINT blocked: a `connect` relay is stopped with Ctrl-C), and signals
 * last, still before the program makes its first thread. */
#include "common/daemon.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

void daemon_die(int status, const char *what, const struct err *e)
{
	if (e)
		log_error(what, "{s:s}", "error", e->msg);
	else
		log_error(what, NULL);
	exit(status);
}

/* Ends the start without serving: frees d and exits with status. */
__attribute__((noreturn)) static void daemon_exit(struct daemon *d, int status)
{
	daemon_end(d);
	exit(status);
}

/* Ends the start with e, logged as what: e is a copy, so d is freed first. */
__attribute__((noreturn)) static void daemon_refuse(struct daemon *d, int status,
						    const char *what, const struct err *e)
{
	daemon_end(d);
	daemon_die(status, what, e);
}

/* Sets e to say that word is no command of o, listing those there are:
 * "unknown command `x` (the commands are `a ARGS` and `b ARGS`)". */
static void daemon_unknown(const struct daemon_opts *o, const char *word, struct err *e)
{
	char list[160] = "";
	size_t at = 0;

	for (size_t i = 0; i < o->ncmds && at < sizeof(list); i++) {
		const struct daemon_cmd *k = &o->cmds[i];
		const char *sep = i == 0 ? "" : i + 1 == o->ncmds ? " and " : ", ";
		int n = snprintf(list + at, sizeof(list) - at, "%s`%s%s%s`", sep, k->name,
				 k->usage ? " " : "", k->usage ? k->usage : "");

		if (n < 0)
			break;
		at += (size_t)n;
	}
	if (o->ncmds == 0)
		err_set(e, 0, "unexpected argument `%s`", word);
	else
		err_set(e, 0, "unknown command `%s` (%s %s)", word,
			o->ncmds == 1 ? "the only one is" : "the commands are", list);
}

int daemon_signals(struct daemon *d, unsigned signals, struct err *e)
{
	sigemptyset(&d->mask);
	d->sigfd = -1;
	signal(SIGPIPE, SIG_IGN);
	if (signals == DAEMON_SIG_NONE)
		return 0;
	sigaddset(&d->mask, SIGTERM);
	sigaddset(&d->mask, SIGINT);
	if (signals & DAEMON_SIG_CHLD)
		sigaddset(&d->mask, SIGCHLD);
	/* Only an invalid argument fails, which these are not. */
	sigprocmask(SIG_BLOCK, &d->mask, NULL);
	if (!(signals & DAEMON_SIG_FD))
		return 0;
	d->sigfd = signalfd(-1, &d->mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sigfd == -1)
		return err_set(e, errno, "signalfd");
	return 0;
}

void daemon_start(const struct daemon_opts *o, int argc, char **argv, struct daemon *d)
{
	int usage = o->usage_status ? o->usage_status : 1;
	struct err e = ERR_INIT;
	char *const *args;
	size_t nargs = 0;
	int r, level;

	*d = (struct daemon){.cfg = NULL, .sigfd = -1};
	sigemptyset(&d->mask);
	log_init(o->prog, LOG_INFO, 2);
	d->cfg = cfg_new(o->opts, o->nopts, o->env_prefix);
	if (!d->cfg) {
		err_set(&e, ENOMEM, "read the configuration");
		daemon_die(1, "cannot start", &e);
	}
	r = cfg_load(d->cfg, argc, argv, &e);
	if (r == 1)
		daemon_exit(d, 0); /* the help is printed */
	if (r == 2) {
		version_print(o->prog);
		daemon_exit(d, 0);
	}
	if (r == -1)
		daemon_refuse(d, usage, "bad configuration", &e);

	level = log_level_parse(cfg_str(d->cfg, "log-level"));
	if (level < 0) {
		/* Name the source: a bad level may come from the file or the environment. */
		err_set(&e, 0, "%s: `%s` is not debug, info, warn or error",
			cfg_source(d->cfg, "log-level"), cfg_str(d->cfg, "log-level"));
		daemon_refuse(d, usage, "bad configuration", &e);
	}
	log_init(o->prog, (enum log_level)level, 2);

	args = cfg_args(d->cfg, &nargs);
	if (nargs > 0) {
		for (size_t i = 0; i < o->ncmds; i++)
			if (strcmp(args[0], o->cmds[i].name) == 0)
				daemon_exit(d, o->cmds[i].run(d->cfg, args, nargs));
		if (!o->args) {
			daemon_unknown(o, args[0], &e);
			daemon_refuse(d, usage, "bad configuration", &e);
		}
	}
	if (daemon_signals(d, o->signals, &e) == -1)
		daemon_refuse(d, 1, "cannot start", &e);
}

void daemon_end(struct daemon *d)
{
	cfg_free(d->cfg);
	d->cfg = NULL;
	if (d->sigfd >= 0)
		close(d->sigfd);
	d->sigfd = -1;
}
