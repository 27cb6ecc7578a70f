/* Starting one service process for cloche-init: a new session and process
 * group, the service's user, directory and environment, stdin from
 * /dev/null and stdout+stderr into the given pipe. */
#ifndef CLOCHE_INIT_SPAWN_H
#define CLOCHE_INIT_SPAWN_H

#include "config.h"

#include <stdbool.h>
#include <sys/types.h>

/* Forks and execs argv with svc's identity (its user and all the user's
 * groups).  out_fd receives stdout and stderr; -1 sends them to /dev/null.
 * with_listen passes the ports init holds for svc as fds 3.. .  Returns the pid (also the process
 * group id), or -1 with e set.  A failed exec shows up as exit status 127
 * with its reason written to out_fd. */
pid_t spawn_service(const struct init_service *svc, char *const argv[], int out_fd,
		    bool with_listen, struct err *e);

/* Signals init blocks (and reads through a signalfd); children unblock them. */
void spawn_signal_set(sigset_t *set);

#endif
