/* Service supervision for cloche-init; see supervisor.h.
 *
 * All decisions happen in sup_step(), which walks the services in start
 * order and moves each through WAITING -> STARTING -> READY, or to BACKOFF
 * when it dies, and then arms the one timer for the earliest deadline it
 * saw.  Events (a child exited, shutdown requested) just call sup_step()
 * again, so there is one place where state changes. */
#include "supervisor.h"
#include "spawn.h"

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 250u
#define BACKOFF_MAX_MS 30000u
#define STABLE_MS 10000u     /* ran this long: the next failure starts backoff anew */
#define DEP_STOP_GRACE_MS 3000u
#define PROBE_EXEC_LIMIT_MS 5000u
#define RELAY_LINE_MAX 2048u

enum svc_state { ST_WAITING, ST_STARTING, ST_READY, ST_STOPPING, ST_BACKOFF, ST_STOPPED };
static const char *const state_names[] = {"waiting", "starting", "ready", "stopping", "backoff", "stopped"};

struct svc {
	struct init_service *cfg;
	enum svc_state state;
	pid_t pid;
	pid_t probe_pid;
	uint64_t since_ms;      /* entered the current state */
	uint64_t started_ms;
	uint64_t next_probe_ms;
	uint64_t probe_started_ms;
	uint64_t restart_at_ms;
	uint64_t kill_at_ms;    /* STOPPING: SIGKILL after this */
	unsigned restarts;
	unsigned failures;      /* consecutive short runs */
	int last_status;        /* wait status of the last exit, -1 if none */
	uint64_t last_ready_ms; /* how long the last start took to become ready */
	int probe_fd;           /* INIT_PROBE_HTTP: the request in flight, or -1 */
	bool probe_sent;        /* ... its request is written */
	uint64_t probe_sent_ms; /* ... connected at */
};

/* One pipe carrying a service's stdout and stderr.  It can outlive the
 * process (a grandchild may hold it), so it lives until the pipe closes;
 * hsrv_free() closes what is left, so the supervisor must be freed after. */
struct relay {
	struct relay *next;
	struct sup *sup;
	char name[64];
	size_t len;
	char line[RELAY_LINE_MAX];
};

struct sup {
	struct init_config *cfg;
	struct hsrv *srv;
	struct svc *svc;
	size_t n;
	struct hsrv_timer *tick;
	struct relay *relays;
	bool shutting_down;
	uint64_t shutdown_deadline_ms;
	uint64_t boot_ms;
};

static void sup_step(void *ud);

static void set_state(struct svc *v, enum svc_state st)
{
	v->state = st;
	v->since_ms = util_now_ms();
}

static void relay_flush(struct relay *r)
{
	if (r->len == 0)
		return;
	r->line[r->len] = '\0';
	log_info(r->line, "{s:s, s:s}", "svc", r->name, "src", "output");
	r->len = 0;
}

static void relay_close(struct relay *r)
{
	relay_flush(r);
	for (struct relay **pp = &r->sup->relays; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	free(r);
}

static int relay_read(void *ud, int fd)
{
	struct relay *r = ud;
	char buf[4096];
	ssize_t n;

	if (fd < 0) {
		relay_close(r);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1; /* the server closes fd and calls back with -1 */
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			relay_flush(r);
			continue;
		}
		if (r->len == RELAY_LINE_MAX - 1)
			relay_flush(r);
		r->line[r->len++] = buf[i];
	}
	return 0;
}

static int relay_open(struct sup *s, struct svc *v, struct err *e)
{
	struct relay *r = calloc(1, sizeof(*r));
	int fds[2];

	if (!r)
		return err_set(e, ENOMEM, "output relay");
	if (pipe2(fds, O_CLOEXEC) == -1) {
		free(r);
		return err_set(e, errno, "pipe");
	}
	r->sup = s;
	snprintf(r->name, sizeof(r->name), "%s", v->cfg->name);
	if (hsrv_watch(s->srv, fds[0], relay_read, r, e)) {
		free(r);
		close(fds[1]);
		return -1;
	}
	r->next = s->relays;
	s->relays = r;
	return fds[1];
}

static void probe_http_end(struct svc *v)
{
	if (v->probe_fd >= 0)
		close(v->probe_fd);
	v->probe_fd = -1;
}

static void svc_spawn(struct sup *s, struct svc *v)
{
	struct err e = ERR_INIT;
	AUTOCLOSE int out = relay_open(s, v, &e);
	pid_t pid;

	if (out < 0 || (pid = spawn_service(v->cfg, v->cfg->argv, out, true, &e)) < 0) {
		log_error("cannot start service", "{s:s, s:s}", "svc", v->cfg->name, "error", e.msg);
		v->failures++;
		v->restart_at_ms = util_now_ms() + BACKOFF_MAX_MS / 10;
		set_state(v, ST_BACKOFF);
		return;
	}
	probe_http_end(v);
	v->pid = pid;
	v->started_ms = util_now_ms();
	v->next_probe_ms = v->started_ms;
	set_state(v, ST_STARTING);
	log_info("service started", "{s:s, s:i, s:i}", "svc", v->cfg->name, "pid", (int)pid,
		 "restarts", (int)v->restarts);
}

static void svc_ready(struct svc *v)
{
	uint64_t now = util_now_ms();

	probe_http_end(v);
	v->last_ready_ms = now - v->started_ms;
	set_state(v, ST_READY);
	log_info("service ready", "{s:s, s:i, s:I}", "svc", v->cfg->name, "pid", (int)v->pid,
		 "ready_ms", (json_int_t)v->last_ready_ms);
}

/* Connect-style probes answer at once on loopback; exec probes run as a
 * child and report through sup_reap(). */
static int probe_connect(const struct init_probe *p)
{
	AUTOCLOSE int fd = -1;

	if (p->kind == INIT_PROBE_UNIX) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		if (strlen(p->path) >= sizeof(sa.sun_path))
			return -1;
		strcpy(sa.sun_path, p->path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		return fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* An HTTP probe for a port init holds: there a connect succeeds before the
 * service runs (the kernel queues it), so ready means an answer came.  One
 * request at a time, never blocking: sent on one tick, read on the next;
 * any response bytes will do, a silent second means ask again. */
static bool probe_http(struct svc *v, uint64_t now)
{
	static const char req[] = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	char c;
	ssize_t n;

	if (v->probe_fd < 0) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)v->cfg->probe.port)};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		v->probe_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (v->probe_fd < 0)
			return false;
		v->probe_sent = false;
		v->probe_sent_ms = now;
		if (connect(v->probe_fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 &&
		    errno != EINPROGRESS)
			probe_http_end(v);
		return false;
	}
	if (!v->probe_sent) {
		n = send(v->probe_fd, req, sizeof(req) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(req) - 1)
			v->probe_sent = true;
		else if ((n == -1 && errno != EAGAIN && errno != ENOTCONN) || n >= 0 ||
			 now > v->probe_sent_ms + 1000)
			probe_http_end(v);
		return false;
	}
	n = recv(v->probe_fd, &c, 1, MSG_DONTWAIT);
	if (n == 1)
		return true;
	if (n == 0 || (errno != EAGAIN && errno != EINTR) || now > v->probe_sent_ms + 1000)
		probe_http_end(v);
	return false;
}

static void svc_probe(struct sup *s, struct svc *v, uint64_t now)
{
	struct init_probe *p = &v->cfg->probe;
	struct err e = ERR_INIT;

	(void)s;
	v->next_probe_ms = now + p->interval_ms;
	switch (p->kind) {
	case INIT_PROBE_NONE:
		svc_ready(v);
		break;
	case INIT_PROBE_UNIX:
	case INIT_PROBE_TCP:
		if (probe_connect(p) == 0)
			svc_ready(v);
		break;
	case INIT_PROBE_HTTP:
		if (probe_http(v, now))
			svc_ready(v);
		break;
	case INIT_PROBE_EXEC:
		if (v->probe_pid > 0)
			break;
		v->probe_pid = spawn_service(v->cfg, p->argv, -1, false, &e);
		if (v->probe_pid < 0) {
			v->probe_pid = 0;
			log_warn("cannot run readiness probe", "{s:s, s:s}", "svc", v->cfg->name, "error", e.msg);
		}
		v->probe_started_ms = now;
		break;
	}
}

static void svc_signal(struct svc *v, int sig)
{
	/* Each service leads its own process group; signal all of it. */
	if (v->pid > 0 && kill(-v->pid, sig) == -1 && errno == ESRCH)
		kill(v->pid, sig);
}

static void svc_stop(struct svc *v, uint64_t grace_ms)
{
	if (v->pid <= 0)
		return;
	svc_signal(v, SIGTERM);
	v->kill_at_ms = util_now_ms() + grace_ms;
	set_state(v, ST_STOPPING);
}

static bool deps_ready(const struct sup *s, const struct svc *v)
{
	for (size_t k = 0; k < v->cfg->nafter; k++)
		if (s->svc[v->cfg->after[k]].state != ST_READY)
			return false;
	return true;
}

static void wake_at(uint64_t *next, uint64_t t)
{
	if (t < *next)
		*next = t;
}

static void sup_step(void *ud)
{
	struct sup *s = ud;
	uint64_t now = util_now_ms(), next = UINT64_MAX;
	bool any_alive = false;

	for (size_t i = 0; i < s->n; i++) {
		struct svc *v = &s->svc[i];

		if (v->probe_pid > 0) {
			if (now > v->probe_started_ms + PROBE_EXEC_LIMIT_MS)
				kill(-v->probe_pid, SIGKILL);
			wake_at(&next, v->probe_started_ms + PROBE_EXEC_LIMIT_MS + 1);
		}
		if (s->shutting_down) {
			if (v->pid > 0 && now >= s->shutdown_deadline_ms)
				svc_signal(v, SIGKILL);
			if (v->state == ST_WAITING || v->state == ST_BACKOFF)
				set_state(v, ST_STOPPED);
			any_alive = any_alive || v->pid > 0 || v->probe_pid > 0;
			continue;
		}
		if (v->state == ST_BACKOFF) {
			if (now < v->restart_at_ms) {
				wake_at(&next, v->restart_at_ms);
				continue;
			}
			set_state(v, ST_WAITING);
		}
		if (v->state == ST_WAITING && deps_ready(s, v))
			svc_spawn(s, v);
		if (v->state == ST_STARTING) {
			if (now > v->started_ms + v->cfg->probe.timeout_ms) {
				log_warn("service not ready in time; restarting", "{s:s, s:i}", "svc",
					 v->cfg->name, "timeout_ms", (int)v->cfg->probe.timeout_ms);
				svc_signal(v, SIGKILL);
			} else if (now >= v->next_probe_ms) {
				svc_probe(s, v, now);
			}
			if (v->state == ST_STARTING)
				wake_at(&next, v->next_probe_ms);
		}
		if (v->state == ST_STOPPING) {
			if (now >= v->kill_at_ms)
				svc_signal(v, SIGKILL);
			else
				wake_at(&next, v->kill_at_ms);
		}
		if (v->state == ST_BACKOFF)
			wake_at(&next, v->restart_at_ms);
	}
	if (s->shutting_down) {
		if (!any_alive) {
			log_info("all services stopped", NULL);
			hsrv_stop(s->srv);
			return;
		}
		wake_at(&next, s->shutdown_deadline_ms);
		if (now >= s->shutdown_deadline_ms)
			wake_at(&next, now + 100);
	}
	if (next != UINT64_MAX)
		hsrv_timer_arm(s->tick, next > now ? next - now : 0);
}

static void svc_exited(struct sup *s, struct svc *v, int status)
{
	uint64_t now = util_now_ms();
	bool was_stopping = v->state == ST_STOPPING;
	uint64_t ran = now > v->started_ms ? now - v->started_ms : 0;
	char how[64];

	if (WIFEXITED(status))
		snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof(how), "signal %d", WTERMSIG(status));
	/* Kill what is left of its process group (helpers, zygotes). */
	kill(-v->pid, SIGKILL);
	v->pid = 0;
	v->last_status = status;
	if (v->probe_pid > 0)
		kill(-v->probe_pid, SIGKILL);
	if (s->shutting_down) {
		set_state(v, ST_STOPPED);
		log_info("service stopped", "{s:s, s:s}", "svc", v->cfg->name, "how", how);
		return;
	}
	v->restarts++;
	if (was_stopping) {
		/* We stopped it because a dependency went away: no penalty. */
		set_state(v, ST_WAITING);
		log_info("service stopped for restart", "{s:s, s:s}", "svc", v->cfg->name, "how", how);
	} else {
		unsigned shift;
		v->failures = ran >= STABLE_MS ? 1 : v->failures + 1;
		shift = v->failures > 8 ? 7 : v->failures - 1;
		uint64_t delay = (uint64_t)BACKOFF_FIRST_MS << shift;
		if (delay > BACKOFF_MAX_MS)
			delay = BACKOFF_MAX_MS;
		v->restart_at_ms = now + delay;
		set_state(v, ST_BACKOFF);
		log_warn("service exited; restarting", "{s:s, s:s, s:I, s:I}", "svc", v->cfg->name,
			 "how", how, "ran_ms", (json_int_t)ran, "restart_in_ms", (json_int_t)delay);
	}
	/* Everything that depends on it lost its peer: restart those too. */
	size_t self = (size_t)(v - s->svc);
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->svc[i].cfg->nafter; k++)
			if (s->svc[i].cfg->after[k] == self &&
			    (s->svc[i].state == ST_STARTING || s->svc[i].state == ST_READY))
				svc_stop(&s->svc[i], DEP_STOP_GRACE_MS);
}

void sup_reap(struct sup *s)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < s->n; i++) {
			struct svc *v = &s->svc[i];
			if (pid == v->pid) {
				svc_exited(s, v, status);
				break;
			}
			if (pid == v->probe_pid) {
				v->probe_pid = 0;
				if (v->state == ST_STARTING && WIFEXITED(status) && WEXITSTATUS(status) == 0)
					svc_ready(v);
				break;
			}
		}
	}
	sup_step(s);
}

void sup_start(struct sup *s)
{
	log_info("starting services", "{s:i}", "count", (int)s->n);
	sup_step(s);
}

void sup_shutdown(struct sup *s)
{
	if (s->shutting_down)
		return;
	s->shutting_down = true;
	s->shutdown_deadline_ms = util_now_ms() + s->cfg->stop_timeout_ms;
	log_info("stopping services", "{s:i}", "timeout_ms", (int)s->cfg->stop_timeout_ms);
	/* Dependents first: reverse start order. */
	for (size_t i = s->n; i-- > 0;)
		if (s->svc[i].pid > 0)
			svc_stop(&s->svc[i], s->cfg->stop_timeout_ms);
	sup_step(s);
}

int sup_all_ready(const struct sup *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->svc[i].state != ST_READY)
			return 0;
	return 1;
}

json_t *sup_status(const struct sup *s)
{
	json_t *o = json_object();
	uint64_t now = util_now_ms();

	for (size_t i = 0; o && i < s->n; i++) {
		const struct svc *v = &s->svc[i];
		json_t *j = json_pack("{s:s, s:i, s:i, s:I}", "state", state_names[v->state], "pid",
				      (int)v->pid, "restarts", (int)v->restarts, "since_ms",
				      (json_int_t)(now - v->since_ms));
		if (!j)
			continue;
		if (v->last_ready_ms)
			json_object_set_new(j, "ready_ms", json_integer((json_int_t)v->last_ready_ms));
		if (v->last_status != -1) {
			int st = v->last_status;
			json_object_set_new(j, "last_exit",
					    WIFEXITED(st) ? json_sprintf("exit %d", WEXITSTATUS(st))
							  : json_sprintf("signal %d", WTERMSIG(st)));
		}
		json_object_set_new(o, v->cfg->name, j);
	}
	return o;
}

struct sup *sup_new(struct init_config *cfg, struct hsrv *srv, struct err *e)
{
	struct sup *s = calloc(1, sizeof(*s));

	if (!s || !(s->svc = calloc(cfg->nsvc, sizeof(*s->svc))) ||
	    !(s->tick = hsrv_timer_new(srv, sup_step, s))) {
		if (s)
			free(s->svc);
		free(s);
		err_set(e, ENOMEM, "supervisor");
		return NULL;
	}
	s->cfg = cfg;
	s->srv = srv;
	s->n = cfg->nsvc;
	s->boot_ms = util_now_ms();
	for (size_t i = 0; i < s->n; i++) {
		s->svc[i].cfg = &cfg->svc[i];
		s->svc[i].last_status = -1;
		s->svc[i].probe_fd = -1;
		set_state(&s->svc[i], ST_WAITING);
	}
	return s;
}

void sup_free(struct sup *s)
{
	if (!s)
		return;
	hsrv_timer_free(s->tick);
	for (size_t i = 0; i < s->n; i++)
		probe_http_end(&s->svc[i]);
	free(s->svc);
	free(s);
}
