/* Start-up of a cloche daemon: the steps every program's main() took, in
 * the same order, as one call.  daemon_start() loads the configuration
 * from the program's option table (common/cfg.h), answers --help and
 * --version, sets the log level from the `log-level` option, runs a
 * sub-command when the first argument names one, and sets up signals:
 * SIGPIPE ignored (a peer that goes away is an error from write(), never
 * a death) and, unless the program catches them itself, SIGTERM and SIGINT
 * blocked for sigwaitinfo() or a signalfd.  A start that fails ends in one
 * JSON log line and an exit status, through daemon_die(), which is for
 * start-up only: once a daemon serves, errors are answered, not fatal.
 *
 *	static const struct daemon_opts start = {
 *		.prog = "cloche-portal", .opts = opts, .nopts = ARRAY_LEN(opts),
 *		.env_prefix = "CLOCHE_PORTAL", .signals = DAEMON_SIG_FD,
 *	};
 *	struct daemon d;
 *
 *	daemon_start(&start, argc, argv, &d);	// returns only to serve
 *	if (hsrv_watch(srv, take_fd(&d.sigfd), on_signal, p, &e) == -1)
 *		daemon_die(1, "cannot start", &e);
 *	...
 *	daemon_end(&d);
 *
 * Signals are blocked before the program makes any thread, so that every
 * thread inherits the mask and the signals reach only the signalfd (or
 * the sigwaitinfo() of main). */
#ifndef CLOCHE_DAEMON_H
#define CLOCHE_DAEMON_H

#include "common/cfg.h"
#include "common/err.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* What daemon_start() does with signals besides ignoring SIGPIPE. */
enum daemon_signals {
	DAEMON_SIG_NONE = 0,       /* leave the mask alone: the program catches SIGTERM
				    * itself (the MCP servers, through mcp_server_run()) */
	DAEMON_SIG_BLOCK = 1 << 0, /* block SIGTERM and SIGINT (for sigwaitinfo()) */
	DAEMON_SIG_CHLD = 1 << 1,  /* block SIGCHLD as well; implies DAEMON_SIG_BLOCK */
	DAEMON_SIG_FD = 1 << 2,    /* and read them from d->sigfd; implies DAEMON_SIG_BLOCK */
};

/* A word after the flags that runs instead of the daemon, such as
 * `cloche-portal key-create NAME`.  It runs with the configuration loaded
 * and the log level set, before any signal is blocked (so Ctrl-C still
 * stops it), and its return value is the process's exit status. */
struct daemon_cmd {
	const char *name;  /* "key-create" */
	const char *usage; /* its arguments, for messages: "NAME [admin|user]" */
	/* args[0] is name, n counts it; c stays the caller's. */
	int (*run)(struct cfg *c, char *const *args, size_t n);
};

struct daemon_opts {
	const char *prog;              /* "cloche-portal": logs, --version, messages */
	const struct cfg_opt *opts;    /* the option table; it must hold "log-level" (CFG_STR) */
	size_t nopts;
	const char *env_prefix;        /* of the environment variables (cfg_new()); NULL: none */
	const struct daemon_cmd *cmds; /* sub-commands, or NULL */
	size_t ncmds;
	bool args;                     /* arguments are the program's (cfg_args()); otherwise
					* one that names no command is refused */
	unsigned signals;              /* enum daemon_signals, or'ed */
	int usage_status;              /* exit status for a bad flag or value; 0 means 1 */
};

/* A started daemon.  The caller owns it and ends it with daemon_end(). */
struct daemon {
	struct cfg *cfg; /* the loaded configuration */
	sigset_t mask;   /* the signals blocked (empty with DAEMON_SIG_NONE) */
	int sigfd;       /* with DAEMON_SIG_FD, a nonblocking close-on-exec signalfd of
			  * mask; else -1.  Hand it on with take_fd(&d->sigfd). */
};

/* Starts the program described by o with its command line; fills d and
 * returns only when the daemon is to run.  Otherwise the process exits
 * here: 0 after --help (the generated help on stdout) or --version
 * ("PROG VERSION" on stdout); a sub-command's status after running it;
 * o->usage_status for a bad flag, option value or log level, an unknown
 * command or an unexpected argument; 1 when out of memory or when the
 * signalfd cannot be made.  Logs go to stderr as o->prog from the first
 * line on.  Call once, from main(), before any thread exists. */
void daemon_start(const struct daemon_opts *o, int argc, char **argv, struct daemon *d);

/* The signal part of daemon_start() alone, for a program that reads its
 * own flags: ignores SIGPIPE, blocks what signals (enum daemon_signals)
 * asks for and records it in d->mask, and makes d->sigfd (or sets it to
 * -1).  d->cfg is left as it is.  Returns 0, or -1 with e set when the
 * signalfd cannot be made (the mask is blocked all the same). */
int daemon_signals(struct daemon *d, unsigned signals, struct err *e);

/* Frees what d still owns: the configuration and a signalfd not taken.
 * The signal mask stays as it is (the process is ending).  d is one that
 * daemon_start() or daemon_signals() filled, or {.cfg = NULL, .sigfd = -1};
 * safe to call twice. */
void daemon_end(struct daemon *d);

/* Start-up failed: logs `what` with e's message as "error" (one JSON line
 * through common/log; e may be NULL) and exits with status: 1 for a
 * failure, the program's usage status for a bad configuration.  For main()
 * before it serves; a running daemon answers errors instead. */
__attribute__((noreturn)) void daemon_die(int status, const char *what, const struct err *e);

#endif
