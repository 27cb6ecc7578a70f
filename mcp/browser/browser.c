/* Browser state kept from DevTools events; see browser.h.  One mutex guards
 * every field below; it is never held across a DevTools command, so the
 * reader thread (which takes it for each event) can always make progress.
 * A second mutex serializes whole tool calls. */
#include "mcp/browser/browser.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BR_MAX_TABS 64
#define BR_CONSOLE_MAX 200
#define BR_CONSOLE_LINE 2000
#define BR_MAX_REFS 50000
#define BR_MAX_FRAMES 64
#define BR_LOCK_WAIT_MS 60000
#define BR_NAV_GRACE_MS 250
/* How long a page whose document is ready may go on loading (images,
 * frames, late scripts) before a wait answers that it is usable. */
#define BR_USABLE_MS 2000
#define BR_NET_MAX 500 /* requests kept per tab (of its current document) */

/* One network request of a tab's current document. */
struct br_req {
	char id[48];
	char method[12];
	char *url;
	char type[16];
	int status;        /* 0 until the response */
	char *failed;      /* the error text of a failed one, or NULL */
};

struct br_tab {
	char target[64];
	char session[64]; /* "" until attached */
	char url[2048];
	char title[256];
	uint64_t epoch;         /* bumped by each main-frame navigation */
	bool loading;
	uint64_t load_started;  /* event sequence numbers */
	uint64_t load_done;
	uint64_t dom_ready;     /* the event that said the document was parsed */
	uint64_t dom_ready_ms;  /* and when */
	char *console[BR_CONSOLE_MAX];
	unsigned con_head, con_n;
	char dialog_type[16];    /* "" when no JavaScript dialog is open */
	char dialog_msg[512];
	struct br_req *net;      /* BR_NET_MAX slots, the oldest dropped */
	unsigned net_head, net_n, net_dropped;
	int chooser_backend;     /* a file chooser opened (intercepted): its input; 0: none */
	bool chooser_multiple;
};

struct br_ref {
	unsigned n;
	int key; /* the walker's number of the element, its frame in the top bits */
};

/* A frame of the current tab the walker read, by its number in refs
 * (0: the page's own, whose id is the target's), and the DevTools session
 * it is reached through once known ("": the tab's). */
struct br_frame {
	char id[64];
	char session[64];
	bool known;
};

/* A frame drawn by a process of its own (another site's, where Chromium
 * isolates sites): auto-attached as a target, reached by its own session
 * in the session of its parent. */
struct br_oop {
	char target[64]; /* = its frame id */
	char session[64];
	char parent[64]; /* the parent's session */
};

struct browser {
	struct browser_opts o;
	struct cdp *cdp;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_mutex_t tool_mu;
	struct br_tab *tabs[BR_MAX_TABS];
	size_t ntabs;
	char cur[64]; /* target id of the current tab; "" when none */
	uint64_t seq; /* counts events, orders load progress against marks */
	uint64_t epoch_gen;
	bool closed;

	char refs_target[64];
	uint64_t refs_epoch;
	unsigned next_ref;  /* the next number handed out */
	unsigned first_ref; /* first number of the current epoch */
	struct br_ref *refs;
	size_t nrefs, caprefs;
	struct br_frame frames[BR_MAX_FRAMES];
	int nframes;
	struct br_oop oop[BR_MAX_FRAMES];
	int noop;
};

struct browser *browser_new(const struct browser_opts *o)
{
	struct browser *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return NULL;
	b->o = *o;
	b->next_ref = b->first_ref = 1;
	pthread_mutex_init(&b->mu, NULL);
	pthread_mutex_init(&b->tool_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	return b;
}

static void br_net_clear(struct br_tab *t)
{
	for (unsigned i = 0; t->net && i < t->net_n; i++) {
		struct br_req *r = &t->net[(t->net_head + i) % BR_NET_MAX];
		free(r->url);
		free(r->failed);
	}
	t->net_head = t->net_n = t->net_dropped = 0;
}

static void br_tab_free(struct br_tab *t)
{
	br_net_clear(t);
	free(t->net);
	if (!t)
		return;
	for (unsigned i = 0; i < BR_CONSOLE_MAX; i++)
		free(t->console[i]);
	free(t);
}

void browser_free(struct browser *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->ntabs; i++)
		br_tab_free(b->tabs[i]);
	free(b->refs);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	pthread_mutex_destroy(&b->tool_mu);
	free(b);
}

/* Waits on b->cv for at most ms.  Lock held. */
static void br_timedwait(struct browser *b, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&b->cv, &b->mu, &ts);
}

static bool br_cancelled(const struct br_cx *cx)
{
	return cx && cx->cancel && cx->cancel(cx->ud);
}

/* --- events (reader thread) --------------------------------------------- */

static struct br_tab *br_by_target(struct browser *b, const char *id)
{
	for (size_t i = 0; id && i < b->ntabs; i++)
		if (strcmp(b->tabs[i]->target, id) == 0)
			return b->tabs[i];
	return NULL;
}

static struct br_tab *br_by_session(struct browser *b, const char *s)
{
	for (size_t i = 0; s && i < b->ntabs; i++)
		if (strcmp(b->tabs[i]->session, s) == 0)
			return b->tabs[i];
	return NULL;
}

static struct br_tab *br_current(struct browser *b)
{
	return br_by_target(b, b->cur);
}

static void br_copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static void br_target_info(struct browser *b, const json_t *info, bool create)
{
	const char *id = json_string_value(json_object_get(info, "targetId"));
	const char *type = json_string_value(json_object_get(info, "type"));
	struct br_tab *t;

	if (!id || !type || strcmp(type, "page") != 0)
		return;
	t = br_by_target(b, id);
	if (!t && create && b->ntabs < BR_MAX_TABS) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return;
		br_copy(t->target, sizeof(t->target), id);
		t->epoch = ++b->epoch_gen;
		b->tabs[b->ntabs++] = t;
		if (!b->cur[0])
			br_copy(b->cur, sizeof(b->cur), id);
	}
	if (!t)
		return;
	br_copy(t->url, sizeof(t->url), json_string_value(json_object_get(info, "url")));
	br_copy(t->title, sizeof(t->title), json_string_value(json_object_get(info, "title")));
}

static void br_target_gone(struct browser *b, const char *id)
{
	for (size_t i = 0; id && i < b->ntabs; i++) {
		if (strcmp(b->tabs[i]->target, id) != 0)
			continue;
		br_tab_free(b->tabs[i]);
		memmove(&b->tabs[i], &b->tabs[i + 1], (b->ntabs - i - 1) * sizeof(b->tabs[0]));
		b->ntabs--;
		if (strcmp(b->cur, id) == 0)
			br_copy(b->cur, sizeof(b->cur), b->ntabs ? b->tabs[b->ntabs - 1]->target : "");
		return;
	}
}

static void br_console_push(struct br_tab *t, const char *line)
{
	unsigned slot = (t->con_head + t->con_n) % BR_CONSOLE_MAX;
	char *copy = strndup(line, BR_CONSOLE_LINE);

	if (!copy)
		return;
	if (t->con_n == BR_CONSOLE_MAX) {
		free(t->console[t->con_head]);
		t->console[t->con_head] = copy;
		t->con_head = (t->con_head + 1) % BR_CONSOLE_MAX;
	} else {
		free(t->console[slot]);
		t->console[slot] = copy;
		t->con_n++;
	}
}

/* One console argument as text: strings raw, other values as JSON, objects
 * by their description. */
static void br_arg_text(const json_t *arg, struct buf *out)
{
	const json_t *v = json_object_get(arg, "value");
	const char *s;

	if (json_is_string(v)) {
		buf_appends(out, json_string_value(v), NULL);
	} else if (v) {
		char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (d)
			buf_appends(out, d, NULL);
		free(d);
	} else if ((s = json_string_value(json_object_get(arg, "unserializableValue"))) ||
		   (s = json_string_value(json_object_get(arg, "description"))) ||
		   (s = json_string_value(json_object_get(arg, "type")))) {
		buf_appends(out, s, NULL);
	}
}

static void br_console_event(struct br_tab *t, const char *method, json_t *params)
{
	struct buf line = BUF_INIT(BR_CONSOLE_LINE);
	const json_t *frame = NULL;

	if (strcmp(method, "Runtime.consoleAPICalled") == 0) {
		const char *type = json_string_value(json_object_get(params, "type"));
		size_t i;
		json_t *arg;
		char up[16] = "LOG";

		for (i = 0; type && type[i] && i < sizeof(up) - 1; i++)
			up[i] = (char)(type[i] >= 'a' && type[i] <= 'z' ? type[i] - 32 : type[i]);
		if (type)
			up[i] = '\0';
		buf_appendf(&line, NULL, "[%s] ", strcmp(up, "WARNING") == 0 ? "WARN" : up);
		json_array_foreach(json_object_get(params, "args"), i, arg) {
			if (i)
				buf_appends(&line, " ", NULL);
			br_arg_text(arg, &line);
		}
		frame = json_array_get(json_object_get(json_object_get(params, "stackTrace"), "callFrames"), 0);
	} else {
		const json_t *d = json_object_get(params, "exceptionDetails");
		const char *desc = json_string_value(json_object_get(json_object_get(d, "exception"), "description"));
		const char *text = json_string_value(json_object_get(d, "text"));
		buf_appendf(&line, NULL, "[ERROR] %s", desc ? desc : text ? text : "exception");
		frame = d;
	}
	if (frame) {
		const char *url = json_string_value(json_object_get(frame, "url"));
		if (url && url[0])
			buf_appendf(&line, NULL, " @ %s:%lld", url,
				    (long long)json_integer_value(json_object_get(frame, "lineNumber")) + 1);
	}
	br_console_push(t, buf_str(&line));
	buf_free(&line);
}

static struct br_req *br_net_find(struct br_tab *t, const char *id)
{
	for (unsigned i = 0; id && t->net && i < t->net_n; i++) {
		struct br_req *r = &t->net[(t->net_head + i) % BR_NET_MAX];
		if (strcmp(r->id, id) == 0)
			return r;
	}
	return NULL;
}

/* Network.* events: the requests of the tab's current document (a new
 * main-frame document starts the list again). */
static void br_net_event(struct br_tab *t, const char *method, json_t *params)
{
	const char *id = json_string_value(json_object_get(params, "requestId"));
	struct br_req *r;

	if (strcmp(method, "Network.requestWillBeSent") == 0) {
		const json_t *req = json_object_get(params, "request");
		const char *type = json_string_value(json_object_get(params, "type")),
			   *frame = json_string_value(json_object_get(params, "frameId"));

		if (type && strcmp(type, "Document") == 0 && frame && strcmp(frame, t->target) == 0)
			br_net_clear(t);
		if (!id || (!t->net && !(t->net = calloc(BR_NET_MAX, sizeof(*t->net)))))
			return;
		if ((r = br_net_find(t, id))) { /* a redirect: the same id goes on */
			free(r->url);
		} else {
			if (t->net_n == BR_NET_MAX) {
				r = &t->net[t->net_head];
				free(r->url);
				free(r->failed);
				t->net_head = (t->net_head + 1) % BR_NET_MAX;
				t->net_dropped++;
			} else {
				r = &t->net[(t->net_head + t->net_n++) % BR_NET_MAX];
			}
			memset(r, 0, sizeof(*r));
			br_copy(r->id, sizeof(r->id), id);
		}
		br_copy(r->method, sizeof(r->method), json_string_value(json_object_get(req, "method")));
		br_copy(r->type, sizeof(r->type), type);
		r->url = strdup(json_string_value(json_object_get(req, "url")) ?: "");
		r->status = 0;
	} else if (!(r = br_net_find(t, id))) {
		return;
	} else if (strcmp(method, "Network.responseReceived") == 0) {
		r->status = (int)json_integer_value(json_object_get(json_object_get(params, "response"), "status"));
	} else if (strcmp(method, "Network.loadingFailed") == 0) {
		free(r->failed);
		r->failed = strdup(json_string_value(json_object_get(params, "errorText")) ?: "failed");
	}
}

/* An out-of-process frame was attached (auto-attach of its parent). */
static void br_oop_add(struct browser *b, const char *parent, const json_t *params)
{
	const json_t *info = json_object_get(params, "targetInfo");
	const char *type = json_string_value(json_object_get(info, "type"));
	const char *id = json_string_value(json_object_get(info, "targetId"));
	const char *sid = json_string_value(json_object_get(params, "sessionId"));

	if (!type || strcmp(type, "iframe") != 0 || !id || !sid || b->noop == BR_MAX_FRAMES)
		return;
	struct br_oop *o = &b->oop[b->noop++];
	br_copy(o->target, sizeof(o->target), id);
	br_copy(o->session, sizeof(o->session), sid);
	/* a frame of the tab itself: "" names the tab's session */
	br_copy(o->parent, sizeof(o->parent), parent && !br_by_session(b, parent) ? parent : "");
}

/* The out-of-process frame whose target (frame id) or, when target is
 * NULL, whose session is the one given; -1 when none.  Under b->mu. */
static int br_oop_index(const struct browser *b, const char *target, const char *session)
{
	for (int i = 0; i < b->noop; i++)
		if (strcmp(target ? b->oop[i].target : b->oop[i].session, target ? target : session) == 0)
			return i;
	return -1;
}

static void br_oop_drop(struct browser *b, const char *sid)
{
	int i = sid ? br_oop_index(b, NULL, sid) : -1;

	if (i >= 0)
		b->oop[i] = b->oop[--b->noop];
}

void browser_on_event(void *ud, const char *session, const char *method, json_t *params)
{
	struct browser *b = ud;
	struct br_tab *t;

	pthread_mutex_lock(&b->mu);
	b->seq++;
	if (!method) {
		b->closed = true;
	} else if (strcmp(method, "Target.targetCreated") == 0) {
		br_target_info(b, json_object_get(params, "targetInfo"), true);
	} else if (strcmp(method, "Target.targetInfoChanged") == 0) {
		br_target_info(b, json_object_get(params, "targetInfo"), false);
	} else if (strcmp(method, "Target.targetDestroyed") == 0) {
		br_target_gone(b, json_string_value(json_object_get(params, "targetId")));
	} else if (strcmp(method, "Target.attachedToTarget") == 0) {
		br_oop_add(b, session, params);
	} else if (strcmp(method, "Target.detachedFromTarget") == 0) {
		const char *sid = json_string_value(json_object_get(params, "sessionId"));
		if ((t = br_by_session(b, sid)))
			t->session[0] = '\0';
		br_oop_drop(b, sid);
	} else if ((t = br_by_session(b, session))) {
		const char *frame = json_string_value(json_object_get(params, "frameId"));
		bool main_frame = frame && strcmp(frame, t->target) == 0;

		if (strcmp(method, "Page.frameNavigated") == 0) {
			const json_t *f = json_object_get(params, "frame");
			if (!json_object_get(f, "parentId")) {
				t->epoch = ++b->epoch_gen;
				br_copy(t->url, sizeof(t->url), json_string_value(json_object_get(f, "url")));
				t->chooser_backend = 0;
			}
		} else if (strcmp(method, "Page.frameStartedLoading") == 0 && main_frame) {
			t->loading = true;
			t->load_started = b->seq;
		} else if (strcmp(method, "Page.domContentEventFired") == 0) {
			t->dom_ready = b->seq;
			t->dom_ready_ms = util_now_ms();
		} else if (strcmp(method, "Page.frameStoppedLoading") == 0 && main_frame) {
			t->loading = false;
			t->load_done = b->seq;
		} else if (strcmp(method, "Page.javascriptDialogOpening") == 0) {
			br_copy(t->dialog_type, sizeof(t->dialog_type),
				json_string_value(json_object_get(params, "type")));
			if (!t->dialog_type[0])
				br_copy(t->dialog_type, sizeof(t->dialog_type), "alert");
			br_copy(t->dialog_msg, sizeof(t->dialog_msg),
				json_string_value(json_object_get(params, "message")));
		} else if (strcmp(method, "Page.javascriptDialogClosed") == 0) {
			t->dialog_type[0] = '\0';
		} else if (strcmp(method, "Runtime.consoleAPICalled") == 0 ||
			   strcmp(method, "Runtime.exceptionThrown") == 0) {
			br_console_event(t, method, params);
		} else if (strncmp(method, "Network.", 8) == 0) {
			br_net_event(t, method, params);
		} else if (strcmp(method, "Page.fileChooserOpened") == 0) {
			t->chooser_backend = (int)json_integer_value(json_object_get(params, "backendNodeId"));
			t->chooser_multiple =
				json_string_value(json_object_get(params, "mode")) &&
				strcmp(json_string_value(json_object_get(params, "mode")), "selectMultiple") == 0;
		}
	}
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

bool browser_closed(struct browser *b)
{
	bool c;

	pthread_mutex_lock(&b->mu);
	c = b->closed;
	pthread_mutex_unlock(&b->mu);
	return c;
}

/* --- commands ------------------------------------------------------------ */

int br_lock(struct browser *b, const struct br_cx *cx, struct err *e)
{
	uint64_t deadline = util_now_ms() + BR_LOCK_WAIT_MS;

	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (pthread_mutex_timedlock(&b->tool_mu, &ts) == 0)
			return 0;
		if (br_cancelled(cx))
			return err_set(e, 0, "cancelled while waiting for another browser call");
		if (util_now_ms() >= deadline)
			return err_set(e, 0, "another browser call has been running for %d s",
				       BR_LOCK_WAIT_MS / 1000);
	}
}

void br_unlock(struct browser *b)
{
	pthread_mutex_unlock(&b->tool_mu);
}

static json_t *br_call(struct browser *b, const struct br_cx *cx, const char *session,
		       const char *method, json_t *params, unsigned timeout_ms, struct err *e)
{
	return cdp_call(b->cdp, session, method, params, timeout_ms, cx ? cx->cancel : NULL,
			cx ? cx->ud : NULL, e);
}

/* Frames in processes of their own (where Chromium isolates sites) are
 * attached as they appear, each with a session of its own. */
static int br_auto_attach(struct browser *b, const struct br_cx *cx, const char *session,
			  struct err *e)
{
	json_t *x = br_call(b, cx, session, "Target.setAutoAttach",
			    json_pack("{s:b, s:b, s:b}", "autoAttach", 1, "waitForDebuggerOnStart", 0,
				      "flatten", 1),
			    b->o.cdp_timeout_ms, e);

	json_decref(x);
	return x ? 0 : -1;
}

/* Attaches to target id when it has no session yet; copies the session
 * into out.  0 or -1. */
static int br_attach(struct browser *b, const struct br_cx *cx, const char *id, char out[64],
		     struct err *e)
{
	/* Network: browser_network_requests; a file chooser is intercepted
	 * (no native dialog on the desktop) and answered by browser_file_upload. */
	static const char *const enable[] = {"Page.enable", "Runtime.enable", "Network.enable",
					     "Page.setInterceptFileChooserDialog"};
	struct br_tab *t;
	AUTOJSON json_t *r = NULL;
	char target[64];

	br_copy(target, sizeof(target), id);
	pthread_mutex_lock(&b->mu);
	t = br_by_target(b, target);
	if (t && t->session[0]) {
		br_copy(out, 64, t->session);
		pthread_mutex_unlock(&b->mu);
		return 0;
	}
	pthread_mutex_unlock(&b->mu);
	if (!t)
		return err_set(e, 0, "the browser has no open tab; use browser_tabs with action \"new\"");
	r = br_call(b, cx, NULL, "Target.attachToTarget",
		    json_pack("{s:s, s:b}", "targetId", target, "flatten", 1), b->o.cdp_timeout_ms, e);
	const char *s = json_string_value(json_object_get(r, "sessionId"));
	if (!s)
		return r ? err_set(e, 0, "Target.attachToTarget: no sessionId") : -1;
	pthread_mutex_lock(&b->mu);
	if ((t = br_by_target(b, target)))
		br_copy(t->session, sizeof(t->session), s);
	pthread_mutex_unlock(&b->mu);
	br_copy(out, 64, s);
	for (size_t i = 0; i < ARRAY_LEN(enable); i++) {
		json_t *x = br_call(b, cx, s, enable[i],
				    strstr(enable[i], "Intercept") ? json_pack("{s:b}", "enabled", 1) : NULL,
				    b->o.cdp_timeout_ms, e);
		if (!x)
			return -1;
		json_decref(x);
	}
	return br_auto_attach(b, cx, s, e);
}

/* A page command is not answered while a JavaScript dialog is open (the
 * renderer waits in alert()), so waiting stops when one opens. */
struct br_dialog_wait {
	struct browser *b;
	const struct br_cx *inner;
	bool opened;
};

static bool br_cancel_or_dialog(void *ud)
{
	struct br_dialog_wait *w = ud;
	char type[16], msg[8];

	if (br_cancelled(w->inner))
		return true;
	if (br_dialog(w->b, type, sizeof(type), msg, sizeof(msg)))
		w->opened = true;
	return w->opened;
}

json_t *br_cdp_t(struct browser *b, const struct br_cx *cx, bool page, const char *method,
		 json_t *params, unsigned timeout_ms, struct err *e)
{
	char session[64] = "", target[64], type[16], msg[512];
	struct br_dialog_wait w = {b, cx, false};
	json_t *r;

	if (!page)
		return br_call(b, cx, NULL, method, params, timeout_ms, e);
	if (br_target(b, target, e) == -1 || br_attach(b, cx, target, session, e) == -1) {
		json_decref(params);
		return NULL;
	}
	if (strcmp(method, "Page.handleJavaScriptDialog") == 0)
		return br_call(b, cx, session, method, params, timeout_ms, e);
	r = cdp_call(b->cdp, session, method, params, timeout_ms, br_cancel_or_dialog, &w, e);
	if (r || !w.opened || !br_dialog(b, type, sizeof(type), msg, sizeof(msg)))
		return r;
	/* Input was delivered and the page answered it with a dialog: that is
	 * the action's outcome, which the caller reports.  Anything else
	 * cannot finish until the dialog is answered. */
	if (strncmp(method, "Input.", 6) == 0) {
		err_clear(e);
		return json_object();
	}
	err_set(e, 0, "a dialog opened in the page (%s: \"%s\"): answer it with browser_handle_dialog", type, msg);
	return NULL;
}

json_t *br_cdp(struct browser *b, const struct br_cx *cx, bool page, const char *method,
	       json_t *params, struct err *e)
{
	return br_cdp_t(b, cx, page, method, params, b->o.cdp_timeout_ms, e);
}

json_t *br_cdp_s(struct browser *b, const struct br_cx *cx, const char *session, const char *method,
		 json_t *params, struct err *e)
{
	if (!session || !session[0])
		return br_cdp(b, cx, true, method, params, e);
	return br_call(b, cx, session, method, params, b->o.cdp_timeout_ms, e);
}

int br_target(struct browser *b, char out[64], struct err *e)
{
	pthread_mutex_lock(&b->mu);
	br_copy(out, 64, b->cur);
	pthread_mutex_unlock(&b->mu);
	if (!out[0])
		return err_set(e, 0, "the browser has no open tab; use browser_tabs with action \"new\"");
	return 0;
}

void br_page_info(struct browser *b, char *url, size_t url_len, char *title, size_t title_len)
{
	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	if (url)
		br_copy(url, url_len, t ? t->url : "");
	if (title)
		br_copy(title, title_len, t ? t->title : "");
	pthread_mutex_unlock(&b->mu);
}

int browser_start(struct browser *b, struct cdp *c, unsigned timeout_ms, struct err *e)
{
	uint64_t deadline = util_now_ms() + timeout_ms;
	json_t *r = NULL;
	struct err ce = ERR_INIT;
	char target[64];

	b->cdp = c;
	/* Chromium reads its pipe only once it is up: the first command waits
	 * for that (3 s inside gVisor). */
	while (!r) {
		uint64_t now = util_now_ms();
		if (now >= deadline || !cdp_alive(c))
			return err_set(e, 0, "DevTools did not answer within %u ms: %s", timeout_ms, ce.msg);
		r = cdp_call(c, NULL, "Target.setDiscoverTargets", json_pack("{s:b}", "discover", 1),
			     (unsigned)(deadline - now), NULL, NULL, &ce);
	}
	json_decref(r);
	pthread_mutex_lock(&b->mu);
	while (!b->cur[0] && !b->closed && util_now_ms() < deadline)
		br_timedwait(b, 100);
	pthread_mutex_unlock(&b->mu);
	if (br_target(b, target, e) == -1)
		return err_wrap(e, "waiting for the first tab");
	char session[64];
	return br_attach(b, NULL, target, session, e);
}

bool br_dialog(struct browser *b, char *type, size_t type_len, char *msg, size_t msg_len)
{
	bool open;

	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	open = t && t->dialog_type[0];
	if (open) {
		br_copy(type, type_len, t->dialog_type);
		br_copy(msg, msg_len, t->dialog_msg);
	}
	pthread_mutex_unlock(&b->mu);
	return open;
}

/* --- navigation ------------------------------------------------------------ */

uint64_t br_load_mark(struct browser *b)
{
	uint64_t m;

	pthread_mutex_lock(&b->mu);
	m = b->seq;
	pthread_mutex_unlock(&b->mu);
	return m;
}

int br_wait_load(struct browser *b, const struct br_cx *cx, uint64_t mark, unsigned timeout_ms,
		 bool only_if_started, struct err *e)
{
	uint64_t start = util_now_ms();
	int rc = 0;

	if (!timeout_ms)
		timeout_ms = b->o.nav_timeout_ms;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		struct br_tab *t = br_current(b);
		uint64_t now = util_now_ms();

		if (!t || b->closed)
			break;
		if (t->load_started > mark && !t->loading && t->load_done >= t->load_started)
			break;
		if (t->load_started > mark && t->dom_ready > t->load_started &&
		    now - t->dom_ready_ms >= BR_USABLE_MS) {
			rc = 1;
			break;
		}
		if (only_if_started && t->load_started <= mark && now - start >= BR_NAV_GRACE_MS)
			break;
		if (now - start >= timeout_ms) {
			rc = err_set(e, 0, "the page did not finish loading within %u ms", timeout_ms);
			break;
		}
		if (br_cancelled(cx)) {
			rc = err_set(e, 0, "cancelled");
			break;
		}
		br_timedwait(b, 50);
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int br_sleep(const struct br_cx *cx, unsigned ms, struct err *e)
{
	uint64_t end = util_now_ms() + ms;

	for (;;) {
		uint64_t now = util_now_ms();
		if (now >= end)
			return 0;
		if (br_cancelled(cx))
			return err_set(e, 0, "cancelled");
		uint64_t left = end - now < 50 ? end - now : 50;
		struct timespec ts = {0, (long)left * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* --- refs ------------------------------------------------------------------ */

void br_refs_begin(struct browser *b)
{
	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	uint64_t epoch = t ? t->epoch : 0;
	if (strcmp(b->refs_target, b->cur) != 0 || b->refs_epoch != epoch) {
		br_copy(b->refs_target, sizeof(b->refs_target), b->cur);
		b->refs_epoch = epoch;
		b->first_ref = b->next_ref;
		b->nrefs = 0;
		b->nframes = 0;
	}
	pthread_mutex_unlock(&b->mu);
}

unsigned br_ref_for(struct browser *b, int key)
{
	unsigned n = 0;

	pthread_mutex_lock(&b->mu);
	/* Snapshots of one document are small enough for a linear scan to
	 * be cheaper than what the snapshot itself costs. */
	for (size_t i = 0; i < b->nrefs; i++)
		if (b->refs[i].key == key) {
			n = b->refs[i].n;
			goto out;
		}
	if (b->nrefs == b->caprefs) {
		size_t cap = b->caprefs ? b->caprefs * 2 : 256;
		struct br_ref *r = cap <= BR_MAX_REFS ? realloc(b->refs, cap * sizeof(*r)) : NULL;
		if (!r)
			goto out;
		b->refs = r;
		b->caprefs = cap;
	}
	n = b->next_ref++;
	b->refs[b->nrefs++] = (struct br_ref){n, key};
out:
	pthread_mutex_unlock(&b->mu);
	return n;
}

int br_frame_number(struct browser *b, const char *frame_id)
{
	int k = -1;

	pthread_mutex_lock(&b->mu);
	for (int i = 1; i < b->nframes && k < 0; i++)
		if (strcmp(b->frames[i].id, frame_id) == 0)
			k = i;
	if (k < 0 && b->nframes < BR_MAX_FRAMES) {
		if (b->nframes == 0)
			b->nframes = 1; /* 0 is the page's own */
		k = b->nframes++;
		br_copy(b->frames[k].id, sizeof(b->frames[k].id), frame_id);
	}
	pthread_mutex_unlock(&b->mu);
	return k;
}

/* The frame id of frame number k and the session it is known to be
 * reached through (known false: not tried yet).  0 or -1 (no such frame). */
static int br_frame_get(struct browser *b, int k, char id[64], char session[64], bool *known,
			struct err *e)
{
	if (k == 0) {
		*known = true;
		session[0] = '\0';
		return br_target(b, id, e);
	}
	pthread_mutex_lock(&b->mu);
	bool ok = k > 0 && k < b->nframes;
	if (ok) {
		br_copy(id, 64, b->frames[k].id);
		br_copy(session, 64, b->frames[k].session);
		*known = b->frames[k].known;
	}
	pthread_mutex_unlock(&b->mu);
	return ok ? 0 : err_set(e, 0, "frame %d is gone", k);
}

/* The session of out-of-process frame id, copied into out; false when
 * there is none. */
static bool br_oop_session(struct browser *b, const char *id, char out[64])
{
	pthread_mutex_lock(&b->mu);
	int i = br_oop_index(b, id, NULL);
	if (i >= 0)
		br_copy(out, 64, b->oop[i].session);
	pthread_mutex_unlock(&b->mu);
	return i >= 0;
}

/* mcp-browser's isolated world in frame k: its execution context, and
 * the session it lives in (copied into session).  A frame the tab's
 * session does not have is looked for among the out-of-process ones. */
static json_t *br_world(struct browser *b, const struct br_cx *cx, int k, char session[64],
			struct err *e)
{
	char id[64];
	bool known;
	json_t *w;

	if (br_frame_get(b, k, id, session, &known, e) == -1)
		return NULL;
	/* One world of that name a frame: the walker installed there stays
	 * while the document lives.  Tried in the tab's session first, then
	 * (once) in the frame's own when it is a process of its own. */
	for (int tries = 0;; tries++) {
		w = br_cdp_s(b, cx, session, "Page.createIsolatedWorld",
			     json_pack("{s:s, s:s}", "frameId", id, "worldName", "cloche-mcp-browser"), e);
		if (w || known || tries > 0 || !br_oop_session(b, id, session))
			break;
		err_clear(e);
		/* its own frames of other sites are attached too */
		if (br_auto_attach(b, cx, session, e) == -1)
			return NULL;
	}
	if (w && !known) {
		pthread_mutex_lock(&b->mu);
		if (k < b->nframes && strcmp(b->frames[k].id, id) == 0) {
			br_copy(b->frames[k].session, sizeof(b->frames[k].session), session);
			b->frames[k].known = true;
		}
		pthread_mutex_unlock(&b->mu);
	}
	return w;
}

json_t *br_walker(struct browser *b, const struct br_cx *cx, int frame, const char *call,
		  bool by_value, char session[64], struct err *e)
{
	AUTOFREE char *expr = NULL;
	AUTOJSON json_t *w = br_world(b, cx, frame, session, e);
	const json_t *ctx = json_object_get(w, "executionContextId");

	if (!w)
		return NULL;
	if (!json_is_integer(ctx)) {
		err_set(e, 0, "no isolated world in frame %d", frame);
		return NULL;
	}
	if (asprintf(&expr, "(globalThis.__clocheWalker ||= %s).%s", br_walk_js, call) == -1) {
		err_set(e, ENOMEM, "walker");
		return NULL;
	}
	json_t *r = br_cdp_s(b, cx, session, "Runtime.evaluate",
			     json_pack("{s:s, s:O, s:b, s:b}", "expression", expr, "contextId", ctx,
				       "returnByValue", by_value, "silent", 1),
			     e);
	const json_t *ex = json_object_get(r, "exceptionDetails");
	if (r && ex) {
		const char *t = json_string_value(
			json_object_get(json_object_get(ex, "exception"), "description"));
		err_set(e, 0, "the page's walker failed: %.300s",
			t ? t : json_string_value(json_object_get(ex, "text")));
		json_decref(r);
		return NULL;
	}
	return r;
}

int br_frame_offset(struct browser *b, const struct br_cx *cx, const char *session, double *x,
		    double *y, struct err *e)
{
	char s[64], frame[64], parent[64];

	*x = *y = 0;
	br_copy(s, sizeof(s), session);
	for (int hops = 0; s[0]; hops++) {
		pthread_mutex_lock(&b->mu);
		int i = br_oop_index(b, NULL, s);
		if (i >= 0) {
			br_copy(frame, sizeof(frame), b->oop[i].target);
			br_copy(parent, sizeof(parent), b->oop[i].parent);
		}
		pthread_mutex_unlock(&b->mu);
		if (i < 0 || hops > BR_MAX_FRAMES)
			return err_set(e, 0, "the element's frame is gone; take a new snapshot");
		/* where the frame's element sits in its parent, in view */
		AUTOJSON json_t *o = br_cdp_s(b, cx, parent, "DOM.getFrameOwner",
					      json_pack("{s:s}", "frameId", frame), e);
		const json_t *be = json_object_get(o, "backendNodeId");
		if (!json_is_integer(be))
			return o ? err_set(e, 0, "the element's frame has no owner in the page") : -1;
		json_decref(br_cdp_s(b, cx, parent, "DOM.scrollIntoViewIfNeeded",
				     json_pack("{s:O}", "backendNodeId", be), NULL));
		AUTOJSON json_t *m = br_cdp_s(b, cx, parent, "DOM.getBoxModel",
					      json_pack("{s:O}", "backendNodeId", be), e);
		const json_t *content = json_object_get(json_object_get(m, "model"), "content");
		if (json_array_size(content) != 8)
			return m ? err_set(e, 0, "the element's frame has no box on the page") : -1;
		*x += json_number_value(json_array_get(content, 0));
		*y += json_number_value(json_array_get(content, 1));
		br_copy(s, sizeof(s), parent);
	}
	return 0;
}

/* The key a ref stands for, 0 when it is not one of this epoch's. */
static int br_ref_key(struct browser *b, const char *ref, struct err *e)
{
	char *end;
	unsigned long n;
	int key = 0;
	bool stale = false;

	if (!ref || ref[0] != 'e' || !ref[1] || (n = strtoul(ref + 1, &end, 10), *end) || n == 0)
		return err_http(e, 400, "\"%.40s\" is not an element ref: refs look like \"e12\" (from browser_snapshot)",
				ref ? ref : ""),
		       0;
	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	if (n >= b->next_ref) {
		pthread_mutex_unlock(&b->mu);
		return err_set(e, 0, "ref %s is unknown: take a browser_snapshot and use a ref from it", ref), 0;
	}
	if (n < b->first_ref || !t || strcmp(b->refs_target, b->cur) != 0 || b->refs_epoch != t->epoch)
		stale = true;
	for (size_t i = 0; !stale && i < b->nrefs; i++)
		if (b->refs[i].n == n)
			key = b->refs[i].key;
	pthread_mutex_unlock(&b->mu);
	if (stale || key <= 0)
		return err_set(e, 0, "ref %s is stale: the page changed since the last browser_snapshot; take a new snapshot", ref),
		       0;
	return key;
}

int br_key_node(struct browser *b, const struct br_cx *cx, int key, char session[64], json_t **node,
		struct err *e)
{
	char call[48];

	snprintf(call, sizeof(call), "get(%d)", key & BR_KEY_ID);
	AUTOJSON json_t *w = br_walker(b, cx, key >> BR_KEY_FRAME_SHIFT, call, false, session, e);
	const char *obj = json_string_value(json_object_get(json_object_get(w, "result"), "objectId"));
	if (!w)
		return -1;
	if (!obj)
		return 1;
	AUTOJSON json_t *d = br_cdp_s(b, cx, session, "DOM.describeNode", json_pack("{s:s}", "objectId", obj), e);
	if (!d)
		return -1;
	*node = json_incref(json_object_get(d, "node"));
	return 0;
}

int br_ref_resolve(struct browser *b, const struct br_cx *cx, const char *ref, struct br_el *el,
		   struct err *e)
{
	AUTOJSON json_t *node = NULL;
	int rc, k = br_ref_key(b, ref, e);

	if (k <= 0)
		return -1;
	/* the walker's element, then the page's own handle of it (tools run
	 * functions on it in the page's world, as browser_evaluate's do) */
	if ((rc = br_key_node(b, cx, k, el->session, &node, e)) == -1)
		return -1;
	if (rc == 1)
		return err_set(e, 0, "ref %s is stale: the element is no longer in the page; take a new snapshot", ref);
	const json_t *be = json_object_get(node, "backendNodeId");
	if (!json_is_integer(be))
		return err_set(e, 0, "ref %s: the element has no node id", ref);
	AUTOJSON json_t *r = br_cdp_s(b, cx, el->session, "DOM.resolveNode",
				      json_pack("{s:O}", "backendNodeId", be), e);
	const char *obj = json_string_value(json_object_get(json_object_get(r, "object"), "objectId"));
	if (!obj)
		return err_set(e, 0, "ref %s is stale: the element is no longer in the page; take a new snapshot", ref);
	br_copy(el->obj, sizeof(el->obj), obj);
	el->backend = (int)json_integer_value(be);
	el->key = k;
	return 0;
}

/* --- console and tabs ------------------------------------------------------ */

int br_console(struct browser *b, struct buf *out, struct err *e)
{
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	for (unsigned i = 0; t && i < t->con_n && rc == 0; i++)
		rc = buf_appendf(out, e, "%s\n", t->console[(t->con_head + i) % BR_CONSOLE_MAX]);
	if (rc == 0 && (!t || !t->con_n))
		rc = buf_appends(out, "No console messages.\n", e);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int br_network(struct browser *b, struct buf *out, struct err *e)
{
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	if (t && t->net_dropped)
		rc = buf_appendf(out, e, "(%u earlier requests not kept)\n", t->net_dropped);
	for (unsigned i = 0; t && t->net && i < t->net_n && rc == 0; i++) {
		const struct br_req *r = &t->net[(t->net_head + i) % BR_NET_MAX];

		rc = buf_appendf(out, e, "- [%s] %s", r->method, r->url);
		if (rc == 0 && r->failed)
			rc = buf_appendf(out, e, " => failed: %s", r->failed);
		else if (rc == 0 && r->status)
			rc = buf_appendf(out, e, " => [%d]", r->status);
		else if (rc == 0)
			rc = buf_appends(out, " => (no answer yet)", e);
		if (rc == 0)
			rc = buf_appendf(out, e, "%s%s%s\n", r->type[0] ? " (" : "", r->type, r->type[0] ? ")" : "");
	}
	if (rc == 0 && (!t || !t->net_n))
		rc = buf_appends(out, "No requests since the page was loaded.\n", e);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int br_file_chooser(struct browser *b, bool *multiple)
{
	int backend = 0;

	pthread_mutex_lock(&b->mu);
	struct br_tab *t = br_current(b);
	if (t) {
		backend = t->chooser_backend;
		*multiple = t->chooser_multiple;
		t->chooser_backend = 0;
	}
	pthread_mutex_unlock(&b->mu);
	return backend;
}

int br_tabs_list(struct browser *b, struct buf *out, struct err *e)
{
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->ntabs && rc == 0; i++) {
		struct br_tab *t = b->tabs[i];
		rc = buf_appendf(out, e, "- %zu:%s [%s](%s)\n", i,
				 strcmp(t->target, b->cur) == 0 ? " (current)" : "", t->title, t->url);
	}
	if (rc == 0 && !b->ntabs)
		rc = buf_appends(out, "No open tabs.\n", e);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

/* Waits until the target-created event for id arrived.  Lock not held. */
static void br_wait_tab(struct browser *b, const char *id)
{
	uint64_t deadline = util_now_ms() + 5000;

	pthread_mutex_lock(&b->mu);
	while (!br_by_target(b, id) && !b->closed && util_now_ms() < deadline)
		br_timedwait(b, 50);
	pthread_mutex_unlock(&b->mu);
}

static int br_activate(struct browser *b, const struct br_cx *cx, const char *id, struct err *e)
{
	AUTOJSON json_t *r = br_call(b, cx, NULL, "Target.activateTarget",
				     json_pack("{s:s}", "targetId", id), b->o.cdp_timeout_ms, e);
	return r ? 0 : -1;
}

static int br_open(struct browser *b, const struct br_cx *cx, const char *url, char id[64],
		   struct err *e)
{
	AUTOJSON json_t *r = br_call(b, cx, NULL, "Target.createTarget",
				     json_pack("{s:s}", "url", url && url[0] ? url : "about:blank"),
				     b->o.cdp_timeout_ms, e);
	const char *s = json_string_value(json_object_get(r, "targetId"));

	if (!s)
		return r ? err_set(e, 0, "Target.createTarget: no targetId") : -1;
	br_copy(id, 64, s);
	br_wait_tab(b, id);
	return 0;
}

int br_tab_new(struct browser *b, const struct br_cx *cx, const char *url, struct err *e)
{
	char id[64];

	if (br_open(b, cx, url, id, e) == -1)
		return -1;
	pthread_mutex_lock(&b->mu);
	if (br_by_target(b, id))
		br_copy(b->cur, sizeof(b->cur), id);
	pthread_mutex_unlock(&b->mu);
	return br_activate(b, cx, id, e);
}

/* The target id of tab index (-1: current) into id.  0 or -1. */
static int br_tab_id(struct browser *b, long long index, char id[64], struct err *e)
{
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	if (index < 0)
		br_copy(id, 64, b->cur);
	else if ((size_t)index < b->ntabs)
		br_copy(id, 64, b->tabs[index]->target);
	else
		rc = err_set(e, 0, "there is no tab %lld: %zu tab%s open (browser_tabs lists them)", index,
			     b->ntabs, b->ntabs == 1 ? " is" : "s are");
	pthread_mutex_unlock(&b->mu);
	if (rc == 0 && !id[0])
		rc = err_set(e, 0, "the browser has no open tab");
	return rc;
}

int br_tab_select(struct browser *b, const struct br_cx *cx, long long index, struct err *e)
{
	char id[64];

	if (br_tab_id(b, index, id, e) == -1)
		return -1;
	pthread_mutex_lock(&b->mu);
	br_copy(b->cur, sizeof(b->cur), id);
	pthread_mutex_unlock(&b->mu);
	return br_activate(b, cx, id, e);
}

static int br_close_id(struct browser *b, const struct br_cx *cx, const char *id, struct err *e)
{
	AUTOJSON json_t *r = br_call(b, cx, NULL, "Target.closeTarget",
				     json_pack("{s:s}", "targetId", id), b->o.cdp_timeout_ms, e);
	uint64_t deadline = util_now_ms() + 5000;

	if (!r)
		return -1;
	pthread_mutex_lock(&b->mu);
	while (br_by_target(b, id) && !b->closed && util_now_ms() < deadline)
		br_timedwait(b, 50);
	pthread_mutex_unlock(&b->mu);
	return 0;
}

int br_tab_close(struct browser *b, const struct br_cx *cx, long long index, struct err *e)
{
	char id[64], fresh[64];
	size_t n;

	if (br_tab_id(b, index, id, e) == -1)
		return -1;
	pthread_mutex_lock(&b->mu);
	n = b->ntabs;
	pthread_mutex_unlock(&b->mu);
	/* Closing Chromium's last tab closes its window, and the desktop's
	 * browser with it. */
	if (n <= 1 && br_open(b, cx, "about:blank", fresh, e) == -1)
		return -1;
	if (br_close_id(b, cx, id, e) == -1)
		return -1;
	pthread_mutex_lock(&b->mu);
	if (!br_by_target(b, b->cur) && b->ntabs)
		br_copy(b->cur, sizeof(b->cur), b->tabs[b->ntabs - 1]->target);
	br_copy(id, 64, b->cur);
	pthread_mutex_unlock(&b->mu);
	return id[0] ? br_activate(b, cx, id, e) : 0;
}

int br_reset(struct browser *b, const struct br_cx *cx, struct err *e)
{
	char fresh[64], id[64];

	if (br_open(b, cx, b->o.start_url, fresh, e) == -1)
		return -1;
	for (int round = 0; round <= BR_MAX_TABS; round++) {
		id[0] = '\0';
		pthread_mutex_lock(&b->mu);
		for (size_t i = 0; i < b->ntabs; i++)
			if (strcmp(b->tabs[i]->target, fresh) != 0) {
				br_copy(id, sizeof(id), b->tabs[i]->target);
				break;
			}
		pthread_mutex_unlock(&b->mu);
		if (!id[0])
			break;
		if (br_close_id(b, cx, id, e) == -1)
			return -1;
	}
	pthread_mutex_lock(&b->mu);
	br_copy(b->cur, sizeof(b->cur), fresh);
	pthread_mutex_unlock(&b->mu);
	return br_activate(b, cx, fresh, e);
}
