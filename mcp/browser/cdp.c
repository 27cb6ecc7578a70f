/* The DevTools pipe client; see cdp.h.  One reader thread per connection;
 * callers queue a pending record, write their request under the write lock
 * and sleep on a shared condition variable until the reader files the answer
 * in their record, the deadline passes, or they are cancelled.  Writes are
 * non-blocking with a poll bound, so a Chromium that stopped reading cannot
 * wedge a tool call. */
#include "mcp/browser/cdp.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CDP_WRITE_TIMEOUT_MS 5000
#define CDP_WAIT_SLICE_MS 100

struct cdp_pending {
	long long id;
	bool done;
	json_t *result;      /* "result" on success */
	char errmsg[300];    /* protocol error or transport failure */
	struct cdp_pending *next;
};

struct cdp {
	int wfd, rfd;
	int wake[2]; /* cdp_free() writes here to stop the reader */
	size_t max_msg;
	cdp_event_fn fn;
	void *ud;
	pthread_t reader;
	bool reader_started;

	pthread_mutex_t mu; /* pending, next_id, alive */
	pthread_cond_t cv;
	pthread_mutex_t wmu; /* one writer at a time */
	struct cdp_pending *pending;
	long long next_id;
	bool alive;
};

static struct cdp_pending *cdp_find(struct cdp *c, long long id)
{
	for (struct cdp_pending *p = c->pending; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

/* Fails one pending call (or every one, id < 0) with msg.  Lock held. */
static void cdp_fail_locked(struct cdp *c, long long id, const char *msg)
{
	for (struct cdp_pending *p = c->pending; p; p = p->next) {
		if ((id >= 0 && p->id != id) || p->done)
			continue;
		p->done = true;
		snprintf(p->errmsg, sizeof(p->errmsg), "%s", msg);
	}
	pthread_cond_broadcast(&c->cv);
}

/* An answer whose text is too big to keep: its id is near the start
 * (Chromium writes {"id":N,...}), so fail that caller rather than leave it
 * to time out. */
static void cdp_oversized(struct cdp *c, const char *head, size_t len)
{
	char tmp[64];
	size_t n = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
	const char *p;

	memcpy(tmp, head, n);
	tmp[n] = '\0';
	p = strstr(tmp, "\"id\":");
	log_warn("devtools message over the size limit dropped", "{s:I}", "limit",
		 (json_int_t)c->max_msg);
	if (!p)
		return;
	pthread_mutex_lock(&c->mu);
	cdp_fail_locked(c, strtoll(p + 5, NULL, 10), "the answer is larger than the message limit");
	pthread_mutex_unlock(&c->mu);
}

static void cdp_dispatch(struct cdp *c, const char *text, size_t len)
{
	json_error_t jerr;
	json_t *msg = json_loadb(text, len, 0, &jerr);
	json_t *id, *session;

	if (!msg || !json_is_object(msg)) {
		log_warn("unparsable devtools message", "{s:s}", "error", jerr.text);
		json_decref(msg);
		return;
	}
	id = json_object_get(msg, "id");
	session = json_object_get(msg, "sessionId");
	if (json_is_integer(id)) {
		pthread_mutex_lock(&c->mu);
		struct cdp_pending *p = cdp_find(c, json_integer_value(id));
		if (p && !p->done) {
			json_t *error = json_object_get(msg, "error");
			p->done = true;
			if (error) {
				const char *m = json_string_value(json_object_get(error, "message"));
				const char *d = json_string_value(json_object_get(error, "data"));
				snprintf(p->errmsg, sizeof(p->errmsg), "%s%s%s", m ? m : "protocol error",
					 d ? ": " : "", d ? d : "");
			} else {
				p->result = json_incref(json_object_get(msg, "result"));
				if (!p->result)
					p->result = json_object();
			}
			pthread_cond_broadcast(&c->cv);
		}
		pthread_mutex_unlock(&c->mu);
	} else {
		const char *method = json_string_value(json_object_get(msg, "method"));
		json_t *params = json_object_get(msg, "params");
		if (method && c->fn)
			c->fn(c->ud, json_string_value(session), method, params ? params : msg);
	}
	json_decref(msg);
}

static void *cdp_reader(void *arg)
{
	struct cdp *c = arg;
	struct buf msg = BUF_INIT(c->max_msg);
	char head[64];
	size_t head_len = 0;
	bool skipping = false;
	char chunk[65536];

	for (;;) {
		struct pollfd pf[2] = {{c->rfd, POLLIN, 0}, {c->wake[0], POLLIN, 0}};
		if (poll(pf, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			break;
		ssize_t n = read(c->rfd, chunk, sizeof(chunk));
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		size_t off = 0;
		while (off < (size_t)n) {
			char *nul = memchr(chunk + off, '\0', (size_t)n - off);
			size_t take = nul ? (size_t)(nul - (chunk + off)) : (size_t)n - off;
			struct err e = ERR_INIT;

			if (!skipping && buf_append(&msg, chunk + off, take, &e) == -1) {
				skipping = true;
				head_len = msg.len < sizeof(head) ? msg.len : sizeof(head);
				if (head_len)
					memcpy(head, msg.data, head_len);
				size_t more = sizeof(head) - head_len < take ? sizeof(head) - head_len : take;
				memcpy(head + head_len, chunk + off, more);
				head_len += more;
				buf_free(&msg);
			}
			if (nul) {
				if (skipping)
					cdp_oversized(c, head, head_len);
				else if (msg.len)
					cdp_dispatch(c, msg.data, msg.len);
				skipping = false;
				buf_reset(&msg);
				/* a huge message's memory is not kept for the next small one */
				if (msg.cap > (1u << 20))
					buf_free(&msg);
			}
			off += take + (nul ? 1 : 0);
		}
	}
	buf_free(&msg);
	pthread_mutex_lock(&c->mu);
	c->alive = false;
	cdp_fail_locked(c, -1, "the browser's DevTools connection closed");
	pthread_mutex_unlock(&c->mu);
	if (c->fn)
		c->fn(c->ud, NULL, NULL, NULL);
	return NULL;
}

struct cdp *cdp_new(int wfd, int rfd, size_t max_msg, cdp_event_fn fn, void *ud,
		    struct err *e)
{
	struct cdp *c = calloc(1, sizeof(*c));
	int r;

	if (!c) {
		close(wfd);
		close(rfd);
		err_set(e, ENOMEM, "devtools client");
		return NULL;
	}
	c->wfd = wfd;
	c->rfd = rfd;
	c->wake[0] = c->wake[1] = -1;
	c->max_msg = max_msg;
	c->fn = fn;
	c->ud = ud;
	c->next_id = 1;
	c->alive = true;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->wmu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK) == -1 ||
	    pipe2(c->wake, O_CLOEXEC) == -1) {
		err_set(e, errno, "devtools pipe setup");
		cdp_free(c);
		return NULL;
	}
	r = pthread_create(&c->reader, NULL, cdp_reader, c);
	if (r != 0) {
		err_set(e, r, "start the devtools reader thread");
		cdp_free(c);
		return NULL;
	}
	c->reader_started = true;
	return c;
}

/* Writes all of p within CDP_WRITE_TIMEOUT_MS.  Write lock held. */
static int cdp_write(struct cdp *c, const char *p, size_t len, struct err *e)
{
	uint64_t deadline = util_now_ms() + CDP_WRITE_TIMEOUT_MS;

	while (len) {
		ssize_t n = write(c->wfd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno != EAGAIN)
			return err_set(e, errno, "write to the browser's DevTools pipe");
		uint64_t now = util_now_ms();
		if (now >= deadline)
			return err_set(e, ETIMEDOUT, "write to the browser's DevTools pipe");
		struct pollfd pf = {c->wfd, POLLOUT, 0};
		poll(&pf, 1, (int)(deadline - now));
	}
	return 0;
}

static void cdp_unlink(struct cdp *c, struct cdp_pending *p)
{
	for (struct cdp_pending **pp = &c->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

json_t *cdp_call(struct cdp *c, const char *session, const char *method, json_t *params,
		 unsigned timeout_ms, cdp_cancel_fn cancel, void *cancel_ud, struct err *e)
{
	struct cdp_pending p = {0};
	AUTOJSON json_t *req = json_object();
	AUTOFREE char *text = NULL;
	json_t *result = NULL;
	uint64_t deadline = util_now_ms() + timeout_ms;

	if (!params)
		params = json_object();
	if (!req || !params) {
		json_decref(params);
		err_set(e, ENOMEM, "%s", method);
		return NULL;
	}
	pthread_mutex_lock(&c->mu);
	if (!c->alive) {
		pthread_mutex_unlock(&c->mu);
		json_decref(params);
		err_set(e, 0, "%s: the browser's DevTools connection is closed", method);
		return NULL;
	}
	p.id = c->next_id++;
	p.next = c->pending;
	c->pending = &p;
	pthread_mutex_unlock(&c->mu);

	json_object_set_new(req, "id", json_integer(p.id));
	json_object_set_new(req, "method", json_string(method));
	json_object_set_new(req, "params", params);
	if (session)
		json_object_set_new(req, "sessionId", json_string(session));
	text = json_dumps(req, JSON_COMPACT);
	struct err we = ERR_INIT;
	int wr = -1;
	if (text) {
		pthread_mutex_lock(&c->wmu);
		/* the NUL that ends the message is written with it */
		wr = cdp_write(c, text, strlen(text) + 1, &we);
		pthread_mutex_unlock(&c->wmu);
	} else {
		err_set(&we, ENOMEM, "encode");
	}

	pthread_mutex_lock(&c->mu);
	if (wr == 0) {
		while (!p.done) {
			uint64_t now = util_now_ms();
			if (now >= deadline) {
				snprintf(p.errmsg, sizeof(p.errmsg),
					 "no answer from the browser within %u ms", timeout_ms);
				break;
			}
			if (cancel && cancel(cancel_ud)) {
				snprintf(p.errmsg, sizeof(p.errmsg), "cancelled");
				break;
			}
			uint64_t slice = deadline - now < CDP_WAIT_SLICE_MS ? deadline - now : CDP_WAIT_SLICE_MS;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += (long)(slice * 1000000);
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&c->cv, &c->mu, &ts);
		}
	} else {
		snprintf(p.errmsg, sizeof(p.errmsg), "%s", we.msg);
	}
	cdp_unlink(c, &p);
	pthread_mutex_unlock(&c->mu);
	result = p.result;
	if (!result || p.errmsg[0]) {
		json_decref(result);
		err_set(e, 0, "%s: %s", method, p.errmsg[0] ? p.errmsg : "no result");
		return NULL;
	}
	return result;
}

bool cdp_alive(struct cdp *c)
{
	bool a;

	pthread_mutex_lock(&c->mu);
	a = c->alive;
	pthread_mutex_unlock(&c->mu);
	return a;
}

void cdp_free(struct cdp *c)
{
	if (!c)
		return;
	if (c->reader_started) {
		char b = 1;
		if (write(c->wake[1], &b, 1) < 0) {
			/* the reader also ends when the pipe closes */
		}
		pthread_join(c->reader, NULL);
	}
	pthread_mutex_lock(&c->mu);
	cdp_fail_locked(c, -1, "the DevTools client is shutting down");
	pthread_mutex_unlock(&c->mu);
	if (c->wfd >= 0)
		close(c->wfd);
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wake[0] >= 0)
		close(c->wake[0]);
	if (c->wake[1] >= 0)
		close(c->wake[1]);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->wmu);
	free(c);
}
