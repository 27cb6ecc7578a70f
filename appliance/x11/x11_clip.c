/* The CLIPBOARD selection; see x11_clip.h.
 *
 * One thread owns the module's X connection.  It sleeps in poll() on the
 * connection and on a pipe; a get or set is a request handed over under a
 * mutex, woken through the pipe and answered through a condition
 * variable.  While it waits for another owner's answer it keeps serving
 * requests for our own text, so a client asking us in between never
 * stalls.  Offers (sets nobody waits for) and watched changes are work
 * the thread does between two sleeps; a change is read only after the
 * events that announced it have all been handled, so the wait for its
 * owner's answer never nests inside another. */
#include "x11_clip.h"

#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum req { REQ_NONE, REQ_SET, REQ_GET, REQ_QUIT };

struct x11_clip {
	Display *dpy;
	Window win;
	Atom clipboard, targets, utf8, text, timestamp, incr, prop, stamp;
	size_t max;
	unsigned flags;
	int fixes_event; /* XFixes event base (X11_CLIP_WATCH) */
	pthread_t th;
	bool started;
	int wake[2];
	int news_fd[2]; /* readable when news is set (X11_CLIP_WATCH) */
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
	char *offer; /* a text to set that nobody waits for, else NULL */
	size_t offer_len;
	char *news; /* another client's text not yet taken, else NULL */
	size_t news_len;
	/* The clipboard thread's own: */
	char *mine; /* our text while we own a selection, else NULL */
	size_t mine_len;
	bool own_clipboard, own_primary;
	bool changed; /* another client took CLIPBOARD: read its text */
	Time owned_at;
};

bool x11_clip_env_enabled(void)
{
	static const char *const on[] = {"", "on", "true", "yes", "1"};
	static const char *const off[] = {"off", "false", "no", "0"};
	const char *v = getenv(X11_CLIP_ENV);

	if (!v)
		return true;
	for (size_t i = 0; i < ARRAY_LEN(on); i++)
		if (strcasecmp(v, on[i]) == 0)
			return true;
	for (size_t i = 0; i < ARRAY_LEN(off); i++)
		if (strcasecmp(v, off[i]) == 0)
			return false;
	log_warn("unknown " X11_CLIP_ENV " value: the clipboard stays off", "{s:s}", "value", v);
	return false;
}

size_t x11_clip_max(const struct x11_clip *c)
{
	return c->max;
}

/* --- the thread's X work ---------------------------------------------------- */

/* Whether our text is selection's content now. */
static bool owns(const struct x11_clip *c, Atom selection)
{
	return c->mine && ((selection == c->clipboard && c->own_clipboard) ||
			   (selection == XA_PRIMARY && c->own_primary));
}

/* Answers one SelectionRequest for our text (or refuses it). */
static void serve(struct x11_clip *c, const XSelectionRequestEvent *rq)
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

	if (!owns(c, rq->selection) || (rq->time != CurrentTime && rq->time < c->owned_at)) {
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

		if (utf8_to_latin1(c->mine, c->mine_len, &l1, &n) == 0) {
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

/* Someone else took selection: our text is no longer its content. */
static void lose(struct x11_clip *c, Atom selection)
{
	if (selection == c->clipboard)
		c->own_clipboard = false;
	else if (selection == XA_PRIMARY)
		c->own_primary = false;
	if (!c->own_clipboard && !c->own_primary) {
		free(c->mine);
		c->mine = NULL;
		c->mine_len = 0;
	}
	log_debug("selection taken over by another client", "{s:s}", "selection",
		  selection == XA_PRIMARY ? "PRIMARY" : "CLIPBOARD");
}

static void handle(struct x11_clip *c, XEvent *ev)
{
	if (ev->type == SelectionRequest) {
		serve(c, &ev->xselectionrequest);
	} else if (ev->type == SelectionClear) {
		lose(c, ev->xselectionclear.selection);
	} else if ((c->flags & X11_CLIP_WATCH) &&
		   ev->type == c->fixes_event + XFixesSelectionNotify) {
		const XFixesSelectionNotifyEvent *n = (const XFixesSelectionNotifyEvent *)ev;

		/* Our own sets come back here too: they are not news. */
		if (n->selection == c->clipboard && n->owner != None && n->owner != c->win)
			c->changed = true;
	}
}

/* Waits up to ms for an event of type on our window, serving the others
 * meanwhile.  0 with *out, or -1 on timeout. */
static int wait_event(struct x11_clip *c, int type, XEvent *out, long ms)
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
static Time server_time(struct x11_clip *c)
{
	XEvent ev;

	XChangeProperty(c->dpy, c->win, c->stamp, XA_STRING, 8, PropModeAppend, NULL, 0);
	for (int i = 0; i < 8; i++) {
		if (wait_event(c, PropertyNotify, &ev, X11_CLIP_TIMEOUT_MS) == -1)
			return CurrentTime;
		if (ev.xproperty.atom == c->stamp)
			return ev.xproperty.time;
	}
	return CurrentTime;
}

static int do_set(struct x11_clip *c, const char *text, size_t len, struct err *e)
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
	c->own_clipboard = true;
	if (c->flags & X11_CLIP_PRIMARY) {
		XSetSelectionOwner(c->dpy, XA_PRIMARY, c->win, t);
		c->own_primary = XGetSelectionOwner(c->dpy, XA_PRIMARY) == c->win;
	}
	return 0;
}

/* Asks the owner for target into c->prop.  0 with *ev, or -1 with e. */
static int convert(struct x11_clip *c, Atom target, XEvent *ev, struct err *e)
{
	XDeleteProperty(c->dpy, c->win, c->prop);
	XConvertSelection(c->dpy, c->clipboard, target, c->prop, c->win, CurrentTime);
	XFlush(c->dpy);
	if (wait_event(c, SelectionNotify, ev, X11_CLIP_TIMEOUT_MS) == -1)
		return err_set(e, ETIMEDOUT, "the clipboard's owner did not answer within %d ms",
			       X11_CLIP_TIMEOUT_MS);
	return 0;
}

static int do_get(struct x11_clip *c, char **out, size_t *len, struct err *e)
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
	if (owner == c->win && c->own_clipboard)
		return utf8_clean(c->mine, c->mine_len, false, out, len) == 0
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
				       "owners do for large texts (xclip from 1 MiB on); texts are "
				       "read up to the limit of %zu bytes in one piece only",
			     c->max);
	else if (fmt != 8 || (type != c->utf8 && type != XA_STRING && type != c->text))
		rc = err_set(e, 0, "the clipboard's owner answered with data that is not text");
	else if (after > 0 || n > c->max)
		rc = err_set(e, EFBIG, "the clipboard's text is over the limit of %zu bytes",
			     c->max);
	else if (utf8_clean((const char *)data, n, type == XA_STRING, out, len) == -1)
		rc = err_set(e, ENOMEM, "clipboard text of %lu bytes", n);
	else
		rc = 0;
	if (data)
		XFree(data);
	XDeleteProperty(c->dpy, c->win, c->prop);
	return rc;
}

/* Reads the text another client just copied and leaves it for
 * x11_clip_take(), replacing any text not taken yet. */
static void read_change(struct x11_clip *c)
{
	struct err e = ERR_INIT;
	char *text = NULL;
	size_t len = 0;
	char one = 1;

	c->changed = false;
	if (XGetSelectionOwner(c->dpy, c->clipboard) == c->win)
		return; /* ours again by now */
	if (do_get(c, &text, &len, &e) != 0) {
		if (e.msg[0])
			log_warn("the clipboard's new text was not read", "{s:s}", "error", e.msg);
		free(text);
		return;
	}
	pthread_mutex_lock(&c->mu);
	free(c->news);
	c->news = text;
	c->news_len = len;
	pthread_mutex_unlock(&c->mu);
	while (write(c->news_fd[1], &one, 1) == -1 && errno == EINTR)
		;
}

/* Sets the latest offer, if any.  Returns whether there was one. */
static bool apply_offer(struct x11_clip *c)
{
	struct err e = ERR_INIT;
	char *text;
	size_t len;

	pthread_mutex_lock(&c->mu);
	text = c->offer;
	len = c->offer_len;
	c->offer = NULL;
	pthread_mutex_unlock(&c->mu);
	if (!text)
		return false;
	if (do_set(c, text, len, &e) == -1)
		log_warn("cannot set the clipboard", "{s:s}", "error", e.msg);
	free(text);
	return true;
}

/* Runs a get or set a caller waits for.  Returns false for REQ_QUIT. */
static bool answer(struct x11_clip *c)
{
	enum req r;

	pthread_mutex_lock(&c->mu);
	r = c->req;
	pthread_mutex_unlock(&c->mu);
	if (r == REQ_QUIT)
		return false;
	if (r == REQ_NONE)
		return true;
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
	return true;
}

static void *clip_thread(void *arg)
{
	struct x11_clip *c = arg;
	struct pollfd pfd[2] = {{.fd = ConnectionNumber(c->dpy), .events = POLLIN},
				{.fd = c->wake[0], .events = POLLIN}};

	for (;;) {
		char drain[16];

		while (XPending(c->dpy)) {
			XEvent ev;

			XNextEvent(c->dpy, &ev);
			handle(c, &ev);
		}
		/* Work may queue events: handle them before sleeping. */
		if (c->changed) {
			read_change(c);
			continue;
		}
		if (apply_offer(c))
			continue;
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			break;
		if (!(pfd[1].revents & POLLIN))
			continue;
		while (read(c->wake[0], drain, sizeof(drain)) > 0)
			;
		if (!answer(c))
			break;
	}
	return NULL;
}

/* --- the callers' side --------------------------------------------------- */

/* Hands r to the thread and waits for its answer.  Locked by call_mu. */
static void ask(struct x11_clip *c, enum req r)
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

static int over_limit(const struct x11_clip *c, size_t len, struct err *e)
{
	return err_set(e, EFBIG, "the text is %zu bytes, over the clipboard limit of %zu", len,
		       c->max);
}

int x11_clip_set(struct x11_clip *c, const char *text, size_t len, struct err *e)
{
	int rc;

	if (len > c->max)
		return over_limit(c, len, e);
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

int x11_clip_offer(struct x11_clip *c, const char *text, size_t len, struct err *e)
{
	char *copy;

	if (len > c->max)
		return over_limit(c, len, e);
	copy = malloc(len + 1);
	if (!copy)
		return err_set(e, ENOMEM, "clipboard text of %zu bytes", len);
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&c->mu);
	free(c->offer);
	c->offer = copy;
	c->offer_len = len;
	pthread_mutex_unlock(&c->mu);
	while (write(c->wake[1], "x", 1) == -1 && errno == EINTR)
		;
	return 0;
}

int x11_clip_fd(const struct x11_clip *c)
{
	return c->news_fd[0];
}

int x11_clip_take(struct x11_clip *c, char **out, size_t *len)
{
	char drain[16];

	if (c->news_fd[0] == -1)
		return 0;
	while (read(c->news_fd[0], drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&c->mu);
	*out = c->news;
	*len = c->news_len;
	c->news = NULL;
	pthread_mutex_unlock(&c->mu);
	return *out != NULL;
}

int x11_clip_get(struct x11_clip *c, char **out, size_t *len, struct err *e)
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

/* Asks the X server to tell us whenever CLIPBOARD changes owner. */
static int watch(struct x11_clip *c, struct err *e)
{
	int error_base;

	if (!XFixesQueryExtension(c->dpy, &c->fixes_event, &error_base))
		return err_set(e, 0, "clipboard: the X server lacks XFIXES, needed to watch it");
	XFixesSelectSelectionInput(c->dpy, c->win, c->clipboard,
				   XFixesSetSelectionOwnerNotifyMask);
	if (pipe2(c->news_fd, O_CLOEXEC | O_NONBLOCK) == -1)
		return err_set(e, errno, "clipboard: pipe");
	return 0;
}

struct x11_clip *x11_clip_open(const char *name, size_t max, unsigned flags, struct err *e)
{
	struct x11_clip *c = calloc(1, sizeof(*c));
	long req_max;

	if (!c) {
		err_set(e, ENOMEM, "clipboard");
		return NULL;
	}
	c->wake[0] = c->wake[1] = c->news_fd[0] = c->news_fd[1] = -1;
	c->flags = flags;
	pthread_mutex_init(&c->call_mu, NULL);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->max = max ? max : X11_CLIP_MAX;
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
	if ((flags & X11_CLIP_WATCH) && watch(c, e) == -1)
		goto fail;
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
	x11_clip_close(c);
	return NULL;
}

void x11_clip_close(struct x11_clip *c)
{
	if (!c)
		return;
	if (c->started) {
		ask(c, REQ_QUIT);
		pthread_join(c->th, NULL);
	}
	if (c->dpy)
		XCloseDisplay(c->dpy);
	for (int i = 0; i < 2; i++) {
		if (c->wake[i] != -1)
			close(c->wake[i]);
		if (c->news_fd[i] != -1)
			close(c->news_fd[i]);
	}
	free(c->mine);
	free(c->offer);
	free(c->news);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->call_mu);
	free(c);
}
