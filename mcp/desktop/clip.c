/* The CLIPBOARD selection; see clip.h.
 *
 * One thread owns the module's X connection.  It sleeps in poll() on the
 * connection and on a pipe; a get or set is a request handed over under a
 * mutex, woken through the pipe and answered through a condition
 * variable.  While it waits for another owner's answer it keeps serving
 * requests for our own text, so a client asking us in between never
 * stalls. */
#include "clip.h"

#include "keys.h"

#include "common/log.h"
#include "common/util.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum req { REQ_NONE, REQ_SET, REQ_GET, REQ_QUIT };

struct desk_clip {
	Display *dpy;
	Window win;
	Atom clipboard, targets, utf8, text, timestamp, incr, prop, stamp;
	size_t max;
	pthread_t th;
	bool started;
	int wake[2];
	pthread_mutex_t call_mu; /* one get or set at a time */
	pthread_mutex_t mu;      /* the request below */
	pthread_cond_t cv;
	enum req req;
	const char *in;
	size_t in_len;
	char *out;
	size_t out_len;
	int rc;
	bool done;
	struct err err;
	/* The clipboard thread's own: */
	char *mine; /* our text while we own the selection, else NULL */
	size_t mine_len;
	Time owned_at;
};

size_t desk_clip_max(const struct desk_clip *c)
{
	return c->max;
}

/* --- text ----------------------------------------------------------------- */

int desk_clip_utf8(const char *s, size_t n, bool latin1, char **out, size_t *len)
{
	const char *p = s, *end = s + n;
	char *o = malloc(3 * n + 1), *q = o;

	if (!o)
		return -1;
	while (p < end) {
		int32_t cp;

		if (latin1) {
			cp = (unsigned char)*p++;
		} else {
			cp = desk_utf8_next(&p, end);
			if (cp < 0) {
				p++;
				cp = 0xfffd;
			}
		}
		if (cp < 0x80) {
			*q++ = (char)cp;
		} else if (cp < 0x800) {
			*q++ = (char)(0xc0 | cp >> 6);
			*q++ = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			*q++ = (char)(0xe0 | cp >> 12);
			*q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*q++ = (char)(0x80 | (cp & 0x3f));
		} else {
			/* Only from UTF-8 input, whose 4-byte form this re-emits:
			 * at most 4 bytes out for 4 in. */
			*q++ = (char)(0xf0 | cp >> 18);
			*q++ = (char)(0x80 | ((cp >> 12) & 0x3f));
			*q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*q++ = (char)(0x80 | (cp & 0x3f));
		}
	}
	*q = '\0';
	*out = o;
	*len = (size_t)(q - o);
	return 0;
}

int desk_clip_latin1(const char *s, size_t n, char **out, size_t *len)
{
	const char *p = s, *end = s + n;
	char *o = malloc(n + 1), *q = o;

	if (!o)
		return -1;
	while (p < end) {
		int32_t cp = desk_utf8_next(&p, end);

		if (cp < 0)
			p++;
		*q++ = cp >= 0 && cp < 0x100 ? (char)cp : '?';
	}
	*q = '\0';
	*out = o;
	*len = (size_t)(q - o);
	return 0;
}

/* --- the thread's X work ---------------------------------------------------- */

/* Answers one SelectionRequest for our text (or refuses it). */
static void serve(struct desk_clip *c, const XSelectionRequestEvent *rq)
{
	XEvent ev = {.xselection = {.type = SelectionNotify,
				    .display = rq->display,
				    .requestor = rq->requestor,
				    .selection = rq->selection,
				    .target = rq->target,
				    .property = None,
				    .time = rq->time}};
	XSelectionEvent *ans = &ev.xselection;
	/* Obsolete clients name no property: the target is used instead. */
	Atom prop = rq->property != None ? rq->property : rq->target;

	if (!c->mine || rq->selection != c->clipboard ||
	    (rq->time != CurrentTime && rq->time < c->owned_at)) {
		/* not ours (any more): refused */
	} else if (rq->target == c->targets) {
		Atom t[] = {c->targets, c->utf8, c->text, XA_STRING, c->timestamp};

		XChangeProperty(c->dpy, rq->requestor, prop, XA_ATOM, 32, PropModeReplace,
				(const unsigned char *)t, (int)ARRAY_LEN(t));
		ans->property = prop;
	} else if (rq->target == c->utf8 || rq->target == c->text) {
		XChangeProperty(c->dpy, rq->requestor, prop, c->utf8, 8, PropModeReplace,
				(const unsigned char *)c->mine, (int)c->mine_len);
		ans->property = prop;
	} else if (rq->target == XA_STRING) {
		char *l1;
		size_t n;

		if (desk_clip_latin1(c->mine, c->mine_len, &l1, &n) == 0) {
			XChangeProperty(c->dpy, rq->requestor, prop, XA_STRING, 8, PropModeReplace,
					(const unsigned char *)l1, (int)n);
			free(l1);
			ans->property = prop;
		}
	} else if (rq->target == c->timestamp) {
		long t = (long)c->owned_at;

		XChangeProperty(c->dpy, rq->requestor, prop, XA_INTEGER, 32, PropModeReplace,
				(const unsigned char *)&t, 1);
		ans->property = prop;
	}
	XSendEvent(c->dpy, rq->requestor, False, NoEventMask, &ev);
	XFlush(c->dpy);
}

static void handle(struct desk_clip *c, XEvent *ev)
{
	if (ev->type == SelectionRequest) {
		serve(c, &ev->xselectionrequest);
	} else if (ev->type == SelectionClear && ev->xselectionclear.selection == c->clipboard) {
		/* Someone else copied: our text is no longer the clipboard's. */
		free(c->mine);
		c->mine = NULL;
		c->mine_len = 0;
		log_debug("clipboard taken over by another client", NULL);
	}
}

/* Waits up to ms for an event of type on our window, serving the others
 * meanwhile.  0 with *out, or -1 on timeout. */
static int wait_event(struct desk_clip *c, int type, XEvent *out, long ms)
{
	uint64_t end = util_now_ms() + (uint64_t)ms;
	struct pollfd pfd = {.fd = ConnectionNumber(c->dpy), .events = POLLIN};

	for (;;) {
		uint64_t now;

		while (XPending(c->dpy)) {
			XNextEvent(c->dpy, out);
			if (out->type == type && out->xany.window == c->win)
				return 0;
			handle(c, out);
		}
		now = util_now_ms();
		if (now >= end)
			return -1;
		if (poll(&pfd, 1, (int)(end - now)) == -1 && errno != EINTR)
			return -1;
	}
}

/* A server timestamp, as ICCCM asks owners to use instead of CurrentTime:
 * the time of a zero-length append to a property of our window. */
static Time server_time(struct desk_clip *c)
{
	XEvent ev;

	XChangeProperty(c->dpy, c->win, c->stamp, XA_STRING, 8, PropModeAppend, NULL, 0);
	for (int i = 0; i < 8; i++) {
		if (wait_event(c, PropertyNotify, &ev, DESK_CLIP_TIMEOUT_MS) == -1)
			return CurrentTime;
		if (ev.xproperty.atom == c->stamp)
			return ev.xproperty.time;
	}
	return CurrentTime;
}

static int do_set(struct desk_clip *c, const char *text, size_t len, struct err *e)
{
	char *copy = malloc(len + 1);
	Time t;

	if (!copy)
		return err_set(e, ENOMEM, "clipboard text of %zu bytes", len);
	memcpy(copy, text, len);
	copy[len] = '\0';
	t = server_time(c);
	XSetSelectionOwner(c->dpy, c->clipboard, c->win, t);
	if (XGetSelectionOwner(c->dpy, c->clipboard) != c->win) {
		free(copy);
		return err_set(e, 0, "the X server did not give us the CLIPBOARD selection");
	}
	free(c->mine);
	c->mine = copy;
	c->mine_len = len;
	c->owned_at = t;
	return 0;
}

/* Asks the owner for target into c->prop.  0 with *ev, or -1 with e. */
static int convert(struct desk_clip *c, Atom target, XEvent *ev, struct err *e)
{
	XDeleteProperty(c->dpy, c->win, c->prop);
	XConvertSelection(c->dpy, c->clipboard, target, c->prop, c->win, CurrentTime);
	XFlush(c->dpy);
	if (wait_event(c, SelectionNotify, ev, DESK_CLIP_TIMEOUT_MS) == -1)
		return err_set(e, ETIMEDOUT, "the clipboard's owner did not answer within %d ms",
			       DESK_CLIP_TIMEOUT_MS);
	return 0;
}

static int do_get(struct desk_clip *c, char **out, size_t *len, struct err *e)
{
	Window owner = XGetSelectionOwner(c->dpy, c->clipboard);
	unsigned long n = 0, after = 0;
	unsigned char *data = NULL;
	Atom type = None;
	XEvent ev;
	int fmt = 0, rc;

	if (owner == None) {
		*out = strdup("");
		*len = 0;
		return *out ? 1 : err_set(e, ENOMEM, "clipboard");
	}
	if (owner == c->win && c->mine)
		return desk_clip_utf8(c->mine, c->mine_len, false, out, len) == 0
			       ? 0
			       : err_set(e, ENOMEM, "clipboard");
	if (convert(c, c->utf8, &ev, e) == -1)
		return -1;
	if (ev.xselection.property == None) {
		/* Older owners offer only STRING (Latin-1). */
		if (convert(c, XA_STRING, &ev, e) == -1)
			return -1;
		if (ev.xselection.property == None)
			return err_set(e, 0, "the clipboard holds no text (its owner offers neither "
					     "UTF8_STRING nor STRING)");
	}
	/* One unit past the limit tells "over" from "exactly at". */
	if (XGetWindowProperty(c->dpy, c->win, c->prop, 0, (long)(c->max / 4 + 1), True,
			       AnyPropertyType, &type, &fmt, &n, &after, &data) != Success)
		return err_set(e, 0, "cannot read the clipboard's text from our window");
	if (type == c->incr)
		rc = err_set(e, EFBIG, "the clipboard's owner sends its text in pieces (INCR), as "
				       "owners do for large texts (xclip from 1 MiB on); mcp-desktop "
				       "reads texts up to its limit of %zu bytes in one piece only",
			     c->max);
	else if (fmt != 8 || (type != c->utf8 && type != XA_STRING && type != c->text))
		rc = err_set(e, 0, "the clipboard's owner answered with data that is not text");
	else if (after > 0 || n > c->max)
		rc = err_set(e, EFBIG, "the clipboard's text is over the limit of %zu bytes",
			     c->max);
	else if (desk_clip_utf8((const char *)data, n, type == XA_STRING, out, len) == -1)
		rc = err_set(e, ENOMEM, "clipboard text of %lu bytes", n);
	else
		rc = 0;
	if (data)
		XFree(data);
	XDeleteProperty(c->dpy, c->win, c->prop);
	return rc;
}

static void *clip_thread(void *arg)
{
	struct desk_clip *c = arg;
	struct pollfd pfd[2] = {{.fd = ConnectionNumber(c->dpy), .events = POLLIN},
				{.fd = c->wake[0], .events = POLLIN}};

	for (;;) {
		enum req r;
		char drain[16];

		while (XPending(c->dpy)) {
			XEvent ev;

			XNextEvent(c->dpy, &ev);
			handle(c, &ev);
		}
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			break;
		if (!(pfd[1].revents & POLLIN))
			continue;
		while (read(c->wake[0], drain, sizeof(drain)) > 0)
			;
		pthread_mutex_lock(&c->mu);
		r = c->req;
		pthread_mutex_unlock(&c->mu);
		if (r == REQ_QUIT)
			break;
		if (r == REQ_NONE)
			continue;
		/* The requester waits for done and touches nothing meanwhile. */
		c->err = (struct err)ERR_INIT;
		if (r == REQ_SET)
			c->rc = do_set(c, c->in, c->in_len, &c->err);
		else
			c->rc = do_get(c, &c->out, &c->out_len, &c->err);
		pthread_mutex_lock(&c->mu);
		c->req = REQ_NONE;
		c->done = true;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

/* --- the callers' side --------------------------------------------------- */

/* Hands r to the thread and waits for its answer.  Locked by call_mu. */
static void ask(struct desk_clip *c, enum req r)
{
	pthread_mutex_lock(&c->mu);
	c->req = r;
	c->done = false;
	pthread_mutex_unlock(&c->mu);
	while (write(c->wake[1], "x", 1) == -1 && errno == EINTR)
		;
	if (r == REQ_QUIT)
		return;
	pthread_mutex_lock(&c->mu);
	while (!c->done)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

int desk_clip_set(struct desk_clip *c, const char *text, size_t len, struct err *e)
{
	int rc;

	if (len > c->max)
		return err_set(e, EFBIG, "the text is %zu bytes, over the clipboard limit of %zu",
			       len, c->max);
	pthread_mutex_lock(&c->call_mu);
	c->in = text;
	c->in_len = len;
	ask(c, REQ_SET);
	rc = c->rc;
	if (rc == -1)
		*e = c->err;
	c->in = NULL;
	pthread_mutex_unlock(&c->call_mu);
	return rc;
}

int desk_clip_get(struct desk_clip *c, char **out, size_t *len, struct err *e)
{
	int rc;

	pthread_mutex_lock(&c->call_mu);
	c->out = NULL;
	c->out_len = 0;
	ask(c, REQ_GET);
	rc = c->rc;
	if (rc == -1)
		*e = c->err;
	*out = c->out;
	*len = c->out_len;
	c->out = NULL;
	pthread_mutex_unlock(&c->call_mu);
	return rc;
}

struct desk_clip *desk_clip_open(const char *name, size_t max, struct err *e)
{
	struct desk_clip *c = calloc(1, sizeof(*c));
	long req_max;

	if (!c) {
		err_set(e, ENOMEM, "clipboard");
		return NULL;
	}
	c->wake[0] = c->wake[1] = -1;
	pthread_mutex_init(&c->call_mu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->max = max ? max : DESK_CLIP_MAX;
	c->dpy = XOpenDisplay(name);
	if (!c->dpy) {
		err_set(e, 0, "clipboard: cannot open X display `%s`",
			name ? name : getenv("DISPLAY"));
		goto fail;
	}
	/* Our text goes out in one ChangeProperty request: it must fit one. */
	req_max = XExtendedMaxRequestSize(c->dpy);
	if (req_max == 0)
		req_max = XMaxRequestSize(c->dpy);
	if ((size_t)req_max * 4 < c->max + 4096) {
		err_set(e, 0, "clipboard: the X server takes requests of at most %ld bytes, less "
			      "than the limit of %zu",
			req_max * 4, c->max);
		goto fail;
	}
	c->win = XCreateSimpleWindow(c->dpy, DefaultRootWindow(c->dpy), -10, -10, 1, 1, 0, 0, 0);
	XSelectInput(c->dpy, c->win, PropertyChangeMask);
	c->clipboard = XInternAtom(c->dpy, "CLIPBOARD", False);
	c->targets = XInternAtom(c->dpy, "TARGETS", False);
	c->utf8 = XInternAtom(c->dpy, "UTF8_STRING", False);
	c->text = XInternAtom(c->dpy, "TEXT", False);
	c->timestamp = XInternAtom(c->dpy, "TIMESTAMP", False);
	c->incr = XInternAtom(c->dpy, "INCR", False);
	c->prop = XInternAtom(c->dpy, "CLOCHE_CLIP", False);
	c->stamp = XInternAtom(c->dpy, "CLOCHE_CLIP_TIME", False);
	XSync(c->dpy, False);
	if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) == -1) {
		err_set(e, errno, "clipboard: pipe");
		goto fail;
	}
	if ((errno = pthread_create(&c->th, NULL, clip_thread, c)) != 0) {
		err_set(e, errno, "clipboard: thread");
		goto fail;
	}
	c->started = true;
	return c;
fail:
	desk_clip_close(c);
	return NULL;
}

void desk_clip_close(struct desk_clip *c)
{
	if (!c)
		return;
	if (c->started) {
		ask(c, REQ_QUIT);
		pthread_join(c->th, NULL);
	}
	if (c->dpy)
		XCloseDisplay(c->dpy);
	for (int i = 0; i < 2; i++)
		if (c->wake[i] != -1)
			close(c->wake[i]);
	free(c->mine);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->call_mu);
	free(c);
}
