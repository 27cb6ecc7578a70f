/* A client connection: what the files of the state machine share.
 *
 * A connection reads one request head (bounded, timed), decides from it
 * alone (Host -> sandbox and port, token -> allowed or not), gets a
 * connection into the sandbox (a kept one, or a new one through the node
 * agent's socket or to the owning node's proxy), writes the rewritten head
 * and then moves bytes: the request body and the response as they come,
 * framed only as far as needed to know where each message ends (so
 * keep-alive and pipelined requests stay in step), and after a 101 as a
 * plain two-way tunnel.  Buffers are taken from the worker only while
 * bytes are in flight, so an idle connection costs its struct and fds.
 *
 * px_machine.c runs it (the states and their order are drawn there); each
 * state's step lives with its concern: HEAD in px_request.c, ROUTE and
 * CONNECT in px_upstream.c, PROXY and TUNNEL in px_relay.c, and ANSWER and
 * LINGER here, with what every state may do: answer the request itself,
 * hold it, or end the connection.  A step returns PX_AGAIN (the state
 * changed: run the next one), PX_WAIT (for an epoll event or the clock) or
 * PX_GONE (c was freed: touch it no more). */
#ifndef PX_CONN_H
#define PX_CONN_H
#include "proxy/px_dir.h"
#include "proxy/px_host.h"
#include "proxy/px_route.h"
#include "proxy/px_tls.h"
#include "proxy/px_worker.h"

#include "common/sbtoken.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum px_cst {
	PX_CS_HEAD, PX_CS_ROUTE, PX_CS_CONNECT, PX_CS_PROXY, PX_CS_TUNNEL, PX_CS_ANSWER, PX_CS_LINGER
};
enum px_step { PX_AGAIN, PX_WAIT, PX_GONE };

struct px_conn {
	struct px_ev ev;
	struct px_worker *w;
	int fd;
	px_ssl *ssl;         /* HTTPS: the client's TLS session, or NULL */
	bool rd, wr, admin;
	bool hup;            /* the client's FIN (or an error) was reported */
	char addr[48];       /* the client's address, as X-Forwarded-For gives it */
	char peer[48];       /* the socket's peer */
	enum px_cst st;
	struct px_dir c2u, u2c;
	size_t head_len;     /* of the request head at c2u.b + c2u.off */
	bool head_ok;        /* w's scratch head is this request's (same call) */
	int minor;           /* the request's HTTP/1.minor */
	bool keep, upgrade, head_method, html, tls;
	bool resp_head;      /* the response head has been parsed */
	bool resp_keep;      /* the server keeps the connection */
	bool sent;           /* response bytes went to the client */
	bool close_after;    /* close the client after this answer */
	bool retry_ok;       /* the request may go again on a fresh connection */
	bool retried;
	uint64_t hold_until; /* held because its node said "not ready": until then */
	bool consumed;       /* the request head was taken out of c2u */
	bool lingering;
	bool waiting;        /* held in ROUTE with a deadline set */
	struct px_route route;
	struct px_rt *rt;    /* a reference while the connection is on a sandbox */
	struct px_rt_view view; /* rt's answer as of view_gen (no lock per request) */
	unsigned view_gen;
	bool have_view;
	unsigned drain_gen;
	struct px_up *up;
	uint64_t deadline;
	int status;
	char tok[SHTOKEN_MAX]; /* the last token this connection proved */
	/* when that token is a share link's: its id ("" otherwise), mode,
	 * expiry (unix s), and the route's revocations seen */
	char share[40];
	char share_mode;
	long long share_exp;
	unsigned share_gen;
	struct px_conn *prev, *next;
};

/* The worker's one parsed head: a request's from px_request.c's on_request() until its
 * upstream head is built in the same run (head_ok), or a response's. */
static inline struct px_head *px_conn_head(struct px_conn *c)
{
	return &c->w->head;
}

/* Whether c holds a request for its sandbox: the route's count of held
 * requests is what makes the resolver ask the portal for a wake. */
static inline void px_conn_set_waiting(struct px_conn *c, bool on)
{
	if (c->waiting == on)
		return;
	c->waiting = on;
	if (c->rt)
		atomic_fetch_add(&c->rt->held, on ? 1 : -1);
}

/* Takes over an accepted socket (admin: from the admin listener): counts
 * it against the limits (over one: a short 503 and close) and registers it
 * with w's epoll.  Owns fd from the call on, whatever happens. */
void px_conn_accept(struct px_worker *w, int fd, bool admin);
/* Ends c at once (its upstream by a reset) and frees it after the current
 * batch of events.  Callers return PX_GONE. */
void px_conn_free(struct px_conn *c);
/* Lets go of c's route entry (and of the request it held on it). */
void px_conn_leave_rt(struct px_conn *c);
/* Our own answer (status, a code and a message for the HTML page or the
 * JSON body, extra header lines or NULL) in place of the sandbox's, and
 * the state that writes it: ANSWER, or LINGER to cut the connection when
 * the client has part of a response already.  Closes c->up.  The
 * connection is kept after it only when the request ended with its head
 * and may be kept.  PX_AGAIN. */
enum px_step px_conn_answer(struct px_conn *c, int status, const char *code, const char *msg,
			    const char *headers);
/* ANSWER: writes our answer, then HEAD (kept) or LINGER. */
enum px_step px_conn_step_answer(struct px_conn *c);
/* LINGER: shuts our side and reads what the client still sends, then frees c. */
enum px_step px_conn_step_linger(struct px_conn *c);
/* Closes every connection and kept upstream of w (the end of a shutdown). */
void px_conn_close_all(struct px_worker *w);

#endif
