/* The egress proxy's engine: one acceptor thread over every sandbox's
 * listener, one thread per connection doing blocking-style I/O with poll
 * timeouts; the policy and the request parsing are in na_egress_policy.c
 * and na_egress_http.c.  See docs/egress.md. */
#include "node-agent/na_egress.h"
#include "node-agent/na_test.h"

#include "common/http_status.h"
#include "common/log.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define HEAD_TIMEOUT_MS 15000
#define CONNECT_TIMEOUT_MS 10000
#define IDLE_TIMEOUT_MS (10 * 60 * 1000)
#define SEND_TIMEOUT_MS 10000
#define RELAY_BUF 16384
#define THREAD_STACK (256 * 1024)

/* ---- the engine ---- */

struct conn {
	struct sb *sb;
	int cfd, ufd;
	struct conn *prev, *next;
};

struct sb {
	char id[64];
	int lfd;
	struct na_egress_policy pol;
	int nconn;
	atomic_bool detaching;
	struct conn *conns;
	struct sb *next;
};

struct na_egress {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* iter advanced, a connection ended */
	int wakefd;
	pthread_t acceptor;
	bool stop, acceptor_done;
	unsigned long iter; /* acceptor snapshots taken */
	struct sb *sbs;
};

static void wake(struct na_egress *eg)
{
	uint64_t one = 1;
	ssize_t r = write(eg->wakefd, &one, sizeof(one));

	(void)r; /* EAGAIN: already pending */
}

static struct sb *find_sb(struct na_egress *eg, const char *id)
{
	struct sb *s;

	for (s = eg->sbs; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

/* Waits until fd is ready for events or the deadline/cancel; 1 ready, 0
 * timed out, -1 cancelled or error. */
static int wait_fd(int fd, short events, uint64_t deadline, const atomic_bool *cancel)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	uint64_t now;
	int r;

	for (;;) {
		if (cancel && atomic_load(cancel))
			return -1;
		now = util_now_ms();
		if (now >= deadline)
			return 0;
		r = poll(&pfd, 1, (int)(deadline - now > 500 ? 500 : deadline - now));
		if (r > 0)
			return 1;
		if (r == -1 && errno != EINTR)
			return -1;
	}
}

/* Sends all of buf on a non-blocking socket within SEND_TIMEOUT_MS.  0/-1. */
static int send_all(int fd, const void *buf, size_t len, const atomic_bool *cancel)
{
	const char *p = buf;
	uint64_t deadline = util_now_ms() + SEND_TIMEOUT_MS;
	ssize_t w;

	while (len > 0) {
		w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
		} else if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, deadline, cancel) != 1)
				return -1;
		} else if (!(w == -1 && errno == EINTR)) {
			return -1;
		}
	}
	return 0;
}

static void send_error(int fd, int code, const char *msg, const atomic_bool *cancel)
{
	char body[320], head[256];
	int bl = snprintf(body, sizeof(body), "cloche egress: %s\n", msg);
	int hl;

	if (bl < 0)
		return;
	if ((size_t)bl >= sizeof(body))
		bl = (int)sizeof(body) - 1;
	hl = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n", code, http_status_reason(code), bl);
	if (send_all(fd, head, (size_t)hl, cancel) == 0)
		send_all(fd, body, (size_t)bl, cancel);
}

static void fmt_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, len, "%s:%d", a, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, len, "[%s]:%d", a, ntohs(s6->sin6_port));
	} else {
		snprintf(out, len, "?");
	}
}

/* What a connection thread found out, for its log line. */
struct outcome {
	const char *verdict; /* allowed, denied, error */
	int status;
	char reason[256];
	char upstream[64];
	unsigned long long up, down;
};

static void refuse(struct conn *c, struct outcome *o, const char *verdict, int code,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void refuse(struct conn *c, struct outcome *o, const char *verdict, int code,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->reason, sizeof(o->reason), fmt, ap);
	va_end(ap);
	o->verdict = verdict;
	o->status = code;
	send_error(c->cfd, code, o->reason, &c->sb->detaching);
}

/* Registers fd as c's upstream socket so detach can shut it down.  -1 when
 * the sandbox is being detached. */
static int set_ufd(struct na_egress *eg, struct conn *c, int fd)
{
	int r = 0;

	pthread_mutex_lock(&eg->mu);
	if (atomic_load(&c->sb->detaching))
		r = -1;
	else
		c->ufd = fd;
	pthread_mutex_unlock(&eg->mu);
	return r;
}

/* Resolves and connects host:port; on success c->ufd is the connected
 * non-blocking socket.  On failure the client has been answered. */
static int connect_upstream(struct na_egress *eg, struct conn *c, const struct na_egress_req *rq,
			    struct outcome *o)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = 0};
	struct addrinfo *res = NULL, *ai;
	char port[8], addr[64];
	uint64_t deadline;
	int r, fd, soerr, last_err = 0, tried = 0;
	bool timed_out = false;
	socklen_t sl;

	snprintf(port, sizeof(port), "%d", rq->port);
	na_test_pause(NA_HOOK_RESOLVE);
	r = getaddrinfo(rq->host, port, &hints, &res);
	if (r != 0) {
		refuse(c, o, "error", 502, "cannot resolve %s: %s", rq->host,
		       r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -1;
	}
	deadline = util_now_ms() + CONNECT_TIMEOUT_MS;
	for (ai = res; ai; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    na_egress_addr_forbidden(ai->ai_addr, ai->ai_addrlen))
			continue;
		if (util_now_ms() >= deadline) {
			timed_out = true;
			break;
		}
		tried++;
		fmt_addr(ai->ai_addr, o->upstream, sizeof(o->upstream));
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd == -1) {
			last_err = errno;
			continue;
		}
		if (set_ufd(eg, c, fd) == -1) {
			close(fd);
			freeaddrinfo(res);
			o->verdict = "error";
			snprintf(o->reason, sizeof(o->reason), "sandbox detached");
			return -1;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return 0;
		}
		soerr = errno;
		if (soerr == EINPROGRESS) {
			r = wait_fd(fd, POLLOUT, deadline, &c->sb->detaching);
			sl = sizeof(soerr);
			if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
			    soerr == 0) {
				freeaddrinfo(res);
				return 0;
			}
			if (r == 0) {
				soerr = ETIMEDOUT;
				timed_out = true;
			} else if (r == -1) {
				soerr = errno ? errno : ECANCELED;
			}
		}
		last_err = soerr;
		pthread_mutex_lock(&eg->mu);
		c->ufd = -1;
		pthread_mutex_unlock(&eg->mu);
		close(fd);
		if (timed_out || atomic_load(&c->sb->detaching))
			break;
	}
	freeaddrinfo(res);
	if (tried == 0 && !timed_out) {
		refuse(c, o, "denied", 403, "%s resolves to a private/link-local/node address",
		       rq->host);
		return -1;
	}
	snprintf(addr, sizeof(addr), "%s", o->upstream);
	if (timed_out)
		refuse(c, o, "error", 504, "connect to %s (%s) timed out after %d s", rq->host,
		       addr, CONNECT_TIMEOUT_MS / 1000);
	else
		refuse(c, o, "error", 502, "connect to %s (%s): %s", rq->host, addr,
		       strerror(last_err));
	return -1;
}

/* One direction of the relay. */
struct pipe_dir {
	int from, to;
	char buf[RELAY_BUF];
	size_t off, len;
	bool eof, done;
	unsigned long long bytes;
};

/* Moves bytes both ways until both directions ended, an error, the idle
 * timeout or detach. */
static void relay(struct conn *c, struct outcome *o, const char *pre, size_t pre_len)
{
	struct pipe_dir *d = calloc(2, sizeof(*d));
	struct pollfd pfd[2];
	uint64_t last = util_now_ms(), now;
	int i, r;
	ssize_t n;

	if (!d)
		return;
	d[0].from = c->cfd;
	d[0].to = c->ufd;
	d[1].from = c->ufd;
	d[1].to = c->cfd;
	if (pre_len > 0) {
		memcpy(d[0].buf, pre, pre_len);
		d[0].len = pre_len;
	}
	while (!(d[0].done && d[1].done) && !atomic_load(&c->sb->detaching)) {
		/* pfd[0] watches the client, pfd[1] the upstream. */
		pfd[0] = (struct pollfd){.fd = c->cfd};
		pfd[1] = (struct pollfd){.fd = c->ufd};
		for (i = 0; i < 2; i++) {
			int src = i, dst = 1 - i; /* d[i] reads pfd[i], writes pfd[1-i] */

			if (d[i].done)
				continue;
			if (d[i].len > 0)
				pfd[dst].events |= POLLOUT;
			else if (!d[i].eof)
				pfd[src].events |= POLLIN;
		}
		for (i = 0; i < 2; i++)
			if (!pfd[i].events)
				pfd[i].fd = -1; /* a hang-up there must not spin the loop */
		now = util_now_ms();
		if (now - last >= IDLE_TIMEOUT_MS) {
			snprintf(o->reason, sizeof(o->reason), "idle for %d s",
				 IDLE_TIMEOUT_MS / 1000);
			break;
		}
		r = poll(pfd, 2, (int)(IDLE_TIMEOUT_MS - (now - last) > 1000 ? 1000
					     : IDLE_TIMEOUT_MS - (now - last)));
		if (r == -1 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			struct pipe_dir *p = &d[i];

			if (p->done)
				continue;
			if (p->len == 0 && !p->eof &&
			    (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				n = recv(p->from, p->buf, sizeof(p->buf), MSG_DONTWAIT);
				if (n > 0) {
					p->off = 0;
					p->len = (size_t)n;
					last = util_now_ms();
				} else if (n == 0) {
					p->eof = true;
				} else if (errno != EAGAIN && errno != EINTR) {
					goto out;
				}
			}
			if (p->len > 0) {
				n = send(p->to, p->buf + p->off, p->len,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
				if (n > 0) {
					p->off += (size_t)n;
					p->len -= (size_t)n;
					p->bytes += (unsigned long long)n;
					last = util_now_ms();
				} else if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK &&
					   errno != EINTR) {
					goto out;
				}
			}
			if (p->eof && p->len == 0) {
				/* Not while detaching: the sandbox's side then
				 * gets a reset, never a FIN (a half-closed end
				 * inside would refuse a checkpoint). */
				if (!atomic_load(&c->sb->detaching))
					shutdown(p->to, SHUT_WR);
				p->done = true;
			}
		}
	}
out:
	o->up += d[0].bytes;
	o->down += d[1].bytes;
	free(d);
}

/* Reads the head within HEAD_TIMEOUT_MS.  Returns the head length, 0 when
 * the client went away or was answered (o filled), into buf (have: bytes). */
static int read_head(struct conn *c, char *buf, size_t cap, size_t *have, struct na_egress_req *rq,
		     struct outcome *o)
{
	uint64_t deadline = util_now_ms() + HEAD_TIMEOUT_MS;
	struct err e = ERR_INIT;
	ssize_t n;
	int r;

	*have = 0;
	for (;;) {
		r = wait_fd(c->cfd, POLLIN, deadline, &c->sb->detaching);
		if (r == 0) {
			refuse(c, o, "error", 408, "no complete request head within %d s",
			       HEAD_TIMEOUT_MS / 1000);
			return 0;
		}
		if (r == -1)
			return 0;
		n = recv(c->cfd, buf + *have, cap - *have, MSG_DONTWAIT);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			snprintf(o->reason, sizeof(o->reason), "client closed before a head");
			return 0;
		}
		if (n < 0)
			continue;
		*have += (size_t)n;
		r = na_egress_parse_head(buf, *have, rq, &e);
		if (r > 0)
			return r;
		if (r == -1) {
			refuse(c, o, "error", e.http_status ? e.http_status : 400, "%s", e.msg);
			return 0;
		}
	}
}

struct conn_arg {
	struct na_egress *eg;
	struct conn *c;
};

static void serve(struct na_egress *eg, struct conn *c, struct outcome *o, struct na_egress_req *rq)
{
	char buf[NA_EGRESS_MAX_HEAD + 1];
	char *fwd;
	size_t have, fl;
	bool ok;
	int hl;
	static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	hl = read_head(c, buf, NA_EGRESS_MAX_HEAD, &have, rq, o);
	if (hl <= 0)
		return;
	pthread_mutex_lock(&eg->mu);
	ok = na_egress_policy_allows(&c->sb->pol, rq->host, rq->port);
	pthread_mutex_unlock(&eg->mu);
	if (!ok) {
		refuse(c, o, "denied", 403, "%s:%d is not in this sandbox's allowlist", rq->host,
		       rq->port);
		return;
	}
	if (connect_upstream(eg, c, rq, o) == -1)
		return;
	o->verdict = "allowed";
	if (rq->connect) {
		o->status = 200;
		if (send_all(c->cfd, est, sizeof(est) - 1, &c->sb->detaching) == -1)
			return;
		relay(c, o, buf + hl, have - (size_t)hl);
		return;
	}
	fwd = malloc(NA_EGRESS_MAX_HEAD + 1024);
	if (!fwd)
		return;
	fl = na_egress_upstream_head(buf, (size_t)hl, rq, fwd, NA_EGRESS_MAX_HEAD + 1024);
	if (fl == 0 || send_all(c->ufd, fwd, fl, &c->sb->detaching) == -1) {
		free(fwd);
		return;
	}
	free(fwd);
	o->up += fl;
	relay(c, o, buf + hl, have - (size_t)hl);
}

/* After an error answer: stop sending, and read what the client still
 * sends for a moment, so closing with unread data (a reset) does not destroy
 * the answer before the client read it. */
static void linger_close(struct conn *c)
{
	uint64_t deadline = util_now_ms() + 2000;
	char sink[4096];
	size_t total = 0;
	ssize_t n;

	shutdown(c->cfd, SHUT_WR);
	while (total < 65536 && wait_fd(c->cfd, POLLIN, deadline, &c->sb->detaching) == 1) {
		n = recv(c->cfd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n <= 0 && !(n == -1 && (errno == EAGAIN || errno == EINTR)))
			break;
		if (n > 0)
			total += (size_t)n;
	}
}

static void *conn_thread(void *arg)
{
	struct conn_arg *a = arg;
	struct na_egress *eg = a->eg;
	struct conn *c = a->c;
	struct sb *sb = c->sb;
	struct outcome o = {.verdict = "error"};
	struct na_egress_req rq;
	uint64_t t0 = util_now_ms();
	int fl;

	free(a);
	memset(&rq, 0, sizeof(rq));
	fl = fcntl(c->cfd, F_GETFL);
	if (fl != -1)
		fcntl(c->cfd, F_SETFL, fl | O_NONBLOCK);
	serve(eg, c, &o, &rq);
	if (o.status && strcmp(o.verdict, "allowed") != 0 && !atomic_load(&sb->detaching))
		linger_close(c);
	if (o.status && strcmp(o.verdict, "allowed") != 0)
		log_info("egress", "{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:I}", "id", sb->id, "host",
			 rq.host, "port", rq.port, "verdict", o.verdict, "status", o.status,
			 "reason", o.reason, "upstream", o.upstream,
			 "ms", (json_int_t)(util_now_ms() - t0));
	else
		log_info("egress", "{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:I, s:I, s:I}", "id",
			 sb->id, "host", rq.host, "port", rq.port, "verdict", o.verdict, "status",
			 o.status, "reason", o.reason, "upstream", o.upstream,
			 "up", (json_int_t)o.up, "down", (json_int_t)o.down,
			 "ms", (json_int_t)(util_now_ms() - t0));

	pthread_mutex_lock(&eg->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		sb->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	sb->nconn--;
	if (atomic_load(&sb->detaching)) {
		/* It ended on its own while its sandbox was being detached,
		 * before na_egress_detach() reached it: a reset here too. */
		struct linger lg = {1, 0};

		setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(c->cfd);
	if (c->ufd != -1)
		close(c->ufd);
	free(c);
	pthread_cond_broadcast(&eg->cv);
	pthread_mutex_unlock(&eg->mu);
	return NULL;
}

/* Accepts what is pending on sb's listener.  Called with eg->mu held.
 * Returns -1 when out of file descriptors (the caller backs off). */
static int accept_on(struct na_egress *eg, struct sb *sb)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
				   "Content-Type: text/plain\r\nContent-Length: 54\r\n"
				   "Connection: close\r\n\r\n"
				   "cloche egress: too many connections from this sandbox\n";
	pthread_attr_t attr;
	struct conn_arg *a;
	struct conn *c;
	int fd, r, k;

	for (k = 0; k < 64; k++) {
		fd = accept4(sb->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd == -1)
			return errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			       errno == ENOBUFS ? -1 : 0;
		if (sb->nconn >= NA_EGRESS_MAX_CONNS) {
			char sink[4096];

			/* Answer, and drop what the client sent already, so the
			 * close does not reset the connection under the answer. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
				shutdown(fd, SHUT_WR);
			while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
			close(fd);
			log_info("egress", "{s:s, s:s, s:i, s:s}", "id", sb->id, "verdict", "error",
				 "status", 503, "reason", "too many connections");
			continue;
		}
		c = calloc(1, sizeof(*c));
		a = malloc(sizeof(*a));
		if (!c || !a) {
			free(c);
			free(a);
			close(fd);
			continue;
		}
		c->sb = sb;
		c->cfd = fd;
		c->ufd = -1;
		a->eg = eg;
		a->c = c;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, THREAD_STACK);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		{
			pthread_t th;

			r = pthread_create(&th, &attr, conn_thread, a);
		}
		pthread_attr_destroy(&attr);
		if (r != 0) {
			log_warn("egress: cannot start a connection thread", "{s:s, s:s}", "id",
				 sb->id, "error", strerror(r));
			free(c);
			free(a);
			close(fd);
			continue;
		}
		c->next = sb->conns;
		if (sb->conns)
			sb->conns->prev = c;
		sb->conns = c;
		sb->nconn++;
	}
	return 0;
}

static void *acceptor_thread(void *arg)
{
	struct na_egress *eg = arg;
	struct pollfd *pfd = NULL;
	struct sb **who = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t drain;
	struct sb *s;
	bool starved = false;

	pthread_mutex_lock(&eg->mu);
	while (!eg->stop) {
		/* Results of the last poll; the sbs are alive (detach waits for
		 * the next snapshot) but may be detaching. */
		for (i = 1; i < n; i++)
			if ((pfd[i].revents & POLLIN) && !atomic_load(&who[i]->detaching) &&
			    accept_on(eg, who[i]) == -1)
				starved = true;
		if (starved) {
			log_warn("egress: out of file descriptors", NULL);
			pthread_mutex_unlock(&eg->mu);
			usleep(100000);
			pthread_mutex_lock(&eg->mu);
			starved = false;
		}
		/* New snapshot. */
		n = 1;
		for (s = eg->sbs; s; s = s->next)
			n++;
		if (n > cap) {
			struct pollfd *np = realloc(pfd, n * sizeof(*pfd));
			struct sb **nw = np ? realloc(who, n * sizeof(*who)) : NULL;

			if (np)
				pfd = np;
			if (nw)
				who = nw;
			if (!np || !nw) {
				n = 0;
				eg->iter++;
				pthread_cond_broadcast(&eg->cv);
				pthread_mutex_unlock(&eg->mu);
				usleep(100000);
				pthread_mutex_lock(&eg->mu);
				continue;
			}
			cap = n;
		}
		pfd[0] = (struct pollfd){.fd = eg->wakefd, .events = POLLIN};
		for (i = 1, s = eg->sbs; s; s = s->next, i++) {
			pfd[i] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
			who[i] = s;
		}
		eg->iter++;
		pthread_cond_broadcast(&eg->cv);
		pthread_mutex_unlock(&eg->mu);
		if (poll(pfd, n, -1) == -1)
			for (i = 0; i < n; i++)
				pfd[i].revents = 0;
		if (pfd[0].revents & POLLIN) {
			if (read(eg->wakefd, &drain, sizeof(drain)) < 0) {
				/* nothing pending after all */
			}
		}
		pthread_mutex_lock(&eg->mu);
	}
	eg->acceptor_done = true;
	pthread_cond_broadcast(&eg->cv);
	pthread_mutex_unlock(&eg->mu);
	free(pfd);
	free(who);
	return NULL;
}

struct na_egress *na_egress_new(struct err *e)
{
	struct na_egress *eg = calloc(1, sizeof(*eg));
	int r;

	if (!eg) {
		err_set(e, ENOMEM, "egress");
		return NULL;
	}
	pthread_mutex_init(&eg->mu, NULL);
	pthread_cond_init(&eg->cv, NULL);
	eg->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (eg->wakefd == -1) {
		err_set(e, errno, "egress: eventfd");
		goto fail;
	}
	r = pthread_create(&eg->acceptor, NULL, acceptor_thread, eg);
	if (r != 0) {
		err_set(e, r, "egress: start the acceptor thread");
		close(eg->wakefd);
		goto fail;
	}
	return eg;
fail:
	pthread_cond_destroy(&eg->cv);
	pthread_mutex_destroy(&eg->mu);
	free(eg);
	return NULL;
}

int na_egress_attach(struct na_egress *eg, const char *id, int listen_fd,
		     const struct na_egress_policy *p, struct err *e)
{
	AUTOCLOSE int fd = listen_fd;
	struct sb *s;
	int fl;

	if (!id || !id[0] || strlen(id) >= sizeof(s->id))
		return err_http(e, 400, "egress: bad sandbox id");
	fl = fcntl(fd, F_GETFL);
	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return err_set(e, errno, "egress %s: listener", id);
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "egress %s", id);
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->pol = *p;
	atomic_init(&s->detaching, false);
	pthread_mutex_lock(&eg->mu);
	if (find_sb(eg, id)) {
		pthread_mutex_unlock(&eg->mu);
		free(s);
		return err_http(e, 409, "egress: %s is already attached", id);
	}
	s->lfd = take_fd(&fd);
	s->next = eg->sbs;
	eg->sbs = s;
	wake(eg);
	pthread_mutex_unlock(&eg->mu);
	return 0;
}

int na_egress_set_policy(struct na_egress *eg, const char *id, const struct na_egress_policy *p,
			 struct err *e)
{
	struct sb *s;

	pthread_mutex_lock(&eg->mu);
	s = find_sb(eg, id);
	if (s)
		s->pol = *p;
	pthread_mutex_unlock(&eg->mu);
	if (!s)
		return err_http(e, 404, "egress: %s is not attached", id);
	return 0;
}

void na_egress_detach(struct na_egress *eg, const char *id)
{
	struct sb **pp, *s = NULL;
	struct conn *c;
	unsigned long it;

	pthread_mutex_lock(&eg->mu);
	for (pp = &eg->sbs; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->id, id) == 0) {
			s = *pp;
			*pp = s->next;
			break;
		}
	if (!s) {
		pthread_mutex_unlock(&eg->mu);
		return;
	}
	atomic_store(&s->detaching, true);
	/* Wait until the acceptor polls a set without s's listener. */
	it = eg->iter;
	wake(eg);
	while (eg->iter == it && !eg->acceptor_done)
		pthread_cond_wait(&eg->cv, &eg->mu);
	close(s->lfd);
	/* The sandbox's side is cut with a reset when its thread closes it (no
	 * FIN: the sandbox must keep no half-closed or TIME_WAIT endpoint, or a
	 * checkpoint right after would be refused); SHUT_RD only wakes the
	 * thread. */
	for (c = s->conns; c; c = c->next) {
		struct linger lg = {1, 0};

		setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		shutdown(c->cfd, SHUT_RD);
		if (c->ufd != -1)
			shutdown(c->ufd, SHUT_RDWR);
	}
	while (s->nconn > 0)
		pthread_cond_wait(&eg->cv, &eg->mu);
	pthread_mutex_unlock(&eg->mu);
	free(s);
}

int na_egress_connections(struct na_egress *eg, const char *id)
{
	struct sb *s;
	int n;

	pthread_mutex_lock(&eg->mu);
	s = find_sb(eg, id);
	n = s ? s->nconn : 0;
	pthread_mutex_unlock(&eg->mu);
	return n;
}

void na_egress_free(struct na_egress *eg)
{
	char id[64];

	if (!eg)
		return;
	pthread_mutex_lock(&eg->mu);
	eg->stop = true;
	wake(eg);
	pthread_mutex_unlock(&eg->mu);
	pthread_join(eg->acceptor, NULL);
	for (;;) {
		pthread_mutex_lock(&eg->mu);
		if (!eg->sbs) {
			pthread_mutex_unlock(&eg->mu);
			break;
		}
		snprintf(id, sizeof(id), "%s", eg->sbs->id);
		pthread_mutex_unlock(&eg->mu);
		na_egress_detach(eg, id);
	}
	close(eg->wakefd);
	pthread_cond_destroy(&eg->cv);
	pthread_mutex_destroy(&eg->mu);
	free(eg);
}
