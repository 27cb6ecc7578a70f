/* The agent's control socket; see agent.h. */
#include "agent.h"

#include "appliance/x11/x11_lease.h"

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CONNS 32

enum kind { K_NEW, K_ACT, K_HELP };

struct conn {
	int fd;
	enum kind kind;
	unsigned help_id;
	size_t len;
	char in[X11_LEASE_LINE_MAX];
};

struct vnc_agent {
	int listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* unlinked when freed */
	struct vnc_lease *lease;
	struct conn conns[MAX_CONNS];
	int nconns;
	int slot[MAX_CONNS]; /* pollfd entry k + 1 is conns[slot[k]] */
	size_t nslots;
};

struct vnc_agent *vnc_agent_new(const char *display, struct vnc_lease *lease, struct err *e)
{
	struct vnc_agent *a = calloc(1, sizeof(*a));
	struct sockaddr_un sa;
	socklen_t len = x11_lease_addr(display, &sa);

	if (!a) {
		err_set(e, ENOMEM, "control socket");
		return NULL;
	}
	a->lease = lease;
	a->listen_fd = -1;
	if (len == 0) {
		err_set(e, ENAMETOOLONG, "control socket path");
		vnc_agent_free(a);
		return NULL;
	}
	/* In a sandbox init made the directory ours (x11_lease.h); elsewhere
	 * (a developer's host, tests as root) make it.  A socket left by our
	 * last run is ours to replace: nobody else may write there. */
	if (util_mkdir_parents(sa.sun_path, 0755) == -1) {
		err_set(e, errno, "control socket directory for `%s`", sa.sun_path);
		vnc_agent_free(a);
		return NULL;
	}
	/* A socket that still answers is another server's on this display
	 * (its lease is the one mcp-desktop asks): fail as a bind would.  One
	 * that refuses was left by our last run. */
	{
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool alive = probe >= 0 && connect(probe, (struct sockaddr *)&sa, len) == 0;

		if (probe >= 0)
			close(probe);
		if (alive) {
			err_set(e, EADDRINUSE, "control socket `%s`: another server has it", sa.sun_path);
			vnc_agent_free(a);
			return NULL;
		}
	}
	unlink(sa.sun_path);
	a->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->listen_fd == -1 || bind(a->listen_fd, (struct sockaddr *)&sa, len) == -1 ||
	    chmod(sa.sun_path, 0666) == -1 || listen(a->listen_fd, 16) == -1) {
		err_set(e, errno, "control socket `%s`", sa.sun_path);
		vnc_agent_free(a);
		return NULL;
	}
	snprintf(a->path, sizeof(a->path), "%s", sa.sun_path);
	return a;
}

static json_t *answer_json(const struct vnc_lease_answer *a)
{
	char taken[32], back[32];

	util_rfc3339_s(a->taken_wall, taken, sizeof(taken));
	util_rfc3339_s(a->back_wall, back, sizeof(back));
	return json_pack("{s:s, s:b, s:s, s:s}", "note", a->note, "left", a->left, "taken", taken,
			 "back", back);
}

/* Sends one JSON line (takes the reference).  Small lines into an idle
 * socket: a full socket means a peer that does not read, which is closed. */
static int send_line(struct conn *c, json_t *msg)
{
	char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	size_t n;
	ssize_t w;

	json_decref(msg);
	if (!s)
		return -1;
	n = strlen(s);
	s[n] = '\n';
	do
		w = send(c->fd, s, n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w == -1 && errno == EINTR);
	free(s);
	return w == (ssize_t)(n + 1) ? 0 : -1;
}

static void conn_close(struct vnc_agent *a, int i, uint64_t now)
{
	struct conn *c = &a->conns[i];

	if (c->kind == K_ACT)
		vnc_lease_agent_end(a->lease);
	else if (c->kind == K_HELP && c->help_id)
		vnc_lease_help_leave(a->lease, c->help_id, now);
	close(c->fd);
	if (i != a->nconns - 1)
		memcpy(c, &a->conns[a->nconns - 1], sizeof(*c));
	a->nconns--;
}

/* Handles the request line of a new connection.  Returns false when the
 * connection is done (answered and to be closed). */
static bool handle(struct vnc_agent *a, struct conn *c)
{
	json_error_t je;
	json_t *req = json_loads(c->in, 0, &je);
	const char *op = json_string_value(json_object_get(req, "op"));
	bool keep = false;

	if (op && strcmp(op, "act") == 0) {
		int64_t since = 0;
		struct vnc_lease_answer hb;

		if (vnc_lease_agent_begin(a->lease, &since) == VNC_LEASE_OK) {
			json_t *ok = json_pack("{s:b}", "ok", 1);

			c->kind = K_ACT; /* busy until the agent closes */
			if (ok && vnc_lease_take_handback(a->lease, &hb))
				json_object_set_new(ok, "handback", answer_json(&hb));
			keep = send_line(c, ok) == 0;
		} else {
			char s[32];

			util_rfc3339_s(since, s, sizeof(s));
			log_info("agent input refused: a person has control", "{s:s, s:s}", "tool",
				 json_string_value(json_object_get(req, "tool")) ?: "", "since", s);
			send_line(c, json_pack("{s:b, s:s}", "ok", 0, "since", s));
		}
	} else if (op && strcmp(op, "help") == 0) {
		const char *reason = json_string_value(json_object_get(req, "reason"));
		unsigned id = reason && reason[0]
				      ? vnc_lease_help_add(a->lease, reason, util_wall_ms())
				      : 0;

		if (id) {
			c->kind = K_HELP;
			c->help_id = id;
			log_info("the agent asks for a person", "{s:I}", "request", (json_int_t)id);
			keep = send_line(c, json_pack("{s:b, s:I}", "ok", 1, "id", (json_int_t)id)) == 0;
		} else {
			send_line(c, json_pack("{s:b, s:s}", "ok", 0, "error",
					       reason && reason[0] ? "too many help requests wait"
								   : "a reason is needed"));
		}
	} else if (op && strcmp(op, "state") == 0) {
		send_line(c, vnc_lease_state_json(a->lease, NULL));
	} else {
		send_line(c, json_pack("{s:b, s:s}", "ok", 0, "error", "unknown op"));
	}
	json_decref(req);
	return keep;
}

/* Reads what a connection sent.  Returns false when it is to be closed. */
static bool conn_read(struct vnc_agent *a, struct conn *c)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->in + c->len, sizeof(c->in) - 1 - c->len, MSG_DONTWAIT);
		char *nl;

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false; /* closed: the action ended, or the request withdrawn */
		if (c->kind != K_NEW) {
			c->len = 0; /* nothing more is expected; ignore it */
			continue;
		}
		c->len += (size_t)n;
		c->in[c->len] = '\0';
		nl = strchr(c->in, '\n');
		if (nl) {
			*nl = '\0';
			return handle(a, c);
		}
		if (c->len == sizeof(c->in) - 1)
			return false; /* a line too long */
	}
}

static void accept_all(struct vnc_agent *a)
{
	for (;;) {
		int fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1) {
			if (errno != EAGAIN && errno != ECONNABORTED && errno != EINTR)
				log_warn("control accept failed", "{s:s}", "error", strerror(errno));
			if (errno == EINTR)
				continue;
			return;
		}
		if (a->nconns == MAX_CONNS) {
			log_warn("too many control connections; refusing one", NULL);
			close(fd);
			continue;
		}
		a->conns[a->nconns++] = (struct conn){.fd = fd, .kind = K_NEW};
	}
}

size_t vnc_agent_pollfds(struct vnc_agent *a, struct pollfd *fds, size_t cap)
{
	size_t n = 0;

	a->nslots = 0;
	if (cap == 0)
		return 0;
	fds[n++] = (struct pollfd){.fd = a->listen_fd, .events = POLLIN};
	for (int i = 0; i < a->nconns && n < cap; i++) {
		fds[n++] = (struct pollfd){.fd = a->conns[i].fd, .events = POLLIN};
		a->slot[a->nslots++] = i;
	}
	return n;
}

void vnc_agent_deliver(struct vnc_agent *a, uint64_t now)
{
	for (int i = a->nconns - 1; i >= 0; i--) {
		struct conn *c = &a->conns[i];
		struct vnc_lease_answer ans;

		if (c->kind != K_HELP || !vnc_lease_help_result(a->lease, c->help_id, &ans))
			continue;
		c->help_id = 0; /* answered: closing withdraws nothing */
		send_line(c, json_pack("{s:o}", "answer", answer_json(&ans)));
		conn_close(a, i, now);
	}
}

void vnc_agent_process(struct vnc_agent *a, const struct pollfd *fds, size_t n, uint64_t now)
{
	bool ready[MAX_CONNS] = {false};

	for (size_t k = 1; k < n && k - 1 < a->nslots; k++)
		if (fds[k].revents)
			ready[a->slot[k - 1]] = true;
	/* backwards: a close moves the last entry into i */
	for (int i = a->nconns - 1; i >= 0; i--)
		if (ready[i] && !conn_read(a, &a->conns[i]))
			conn_close(a, i, now);
	a->nslots = 0;
	if (n > 0 && (fds[0].revents & POLLIN))
		accept_all(a);
	vnc_agent_deliver(a, now);
}

void vnc_agent_free(struct vnc_agent *a)
{
	if (!a)
		return;
	while (a->nconns > 0)
		conn_close(a, a->nconns - 1, util_now_ms());
	if (a->listen_fd >= 0)
		close(a->listen_fd);
	if (a->path[0])
		unlink(a->path);
	free(a);
}
