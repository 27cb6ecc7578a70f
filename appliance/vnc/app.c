/* Module wiring and the event loop of cloche-vnc; see app.h.
 *
 * One iteration: drain queued X events (damage, cursor, pointer, keymap),
 * move the painted cursor and expire click rings, grab the screen if a
 * grab is due, let libvncserver read viewer input and send
 * updates, flush X requests, then sleep in poll().  Xlib may read events
 * into its queue during any round trip, so a non-empty queue makes the
 * poll timeout zero rather than leaving events stranded. */
#include "app.h"

#include "agent.h"
#include "capture.h"
#include "clip.h"
#include "cursor.h"
#include "display.h"
#include "http.h"
#include "input.h"
#include "lease.h"
#include "marker.h"
#include "net.h"
#include "pointer.h"
#include "resize.h"
#include "server.h"
#include "state.h"

#include "common/secret.h"
#include "common/log.h"
#include "common/sbtoken.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* Signal fd, X, RFB listener, libvncserver sockets, HTTP listener + conns. */
#define MAX_POLL 1200

struct vnc_app {
	struct vnc_options opts;
	struct vnc_display disp;
	struct vnc_capture *cap;
	struct vnc_input *in;
	struct vnc_cursor *cur;
	struct vnc_pointer *ptr;
	struct vnc_server *srv;
	struct vnc_http *http;
	struct vnc_clip *clip;
	struct vnc_lease *lease; /* NULL with --control shared or no input */
	struct vnc_agent *agent;
	unsigned lease_seen;     /* the lease version viewers were told of */
	struct vnc_state *state; /* what outlives a restart (--state-dir) */
	struct vnc_resize *resize;
	int rfb_fd;
	int sig_fd;
	char secret[SECRET_TOKEN_MAX + 1]; /* the sandbox's secret, what the guard checks */
	char view_secret[48]; /* of the secret: for viewers that may only watch */
	struct pollfd fds[MAX_POLL];
};

/* Writes what a restart must not lose; a failure is logged (the process
 * goes on, and a restart would then forget). */
static void save_state(struct vnc_app *app)
{
	struct err e = ERR_INIT;

	if (vnc_state_save(app->state, app->secret, app->lease, &e) == -1)
		log_error("cannot save the state for a restart", "{s:s}", "error", e.msg);
}

/* POST /cloche/rekey, checked: the guard reads app->secret and
 * app->view_secret, so replacing them in place is the whole change for
 * the web port; the RFB passwords follow. */
static int on_rekey(void *ctx, const char *secret, struct err *e)
{
	struct vnc_app *app = ctx;
	char view[sizeof(app->view_secret)];

	if (strlen(secret) >= sizeof(app->secret) ||
	    sbtoken_view_secret(secret, view, sizeof(view)) == -1)
		return err_set(e, 0, "no view secret for the new secret");
	if (vnc_server_set_secret(app->srv, secret, view, e) == -1) {
		explicit_bzero(view, sizeof(view));
		return -1;
	}
	snprintf(app->secret, sizeof(app->secret), "%s", secret);
	memcpy(app->view_secret, view, sizeof(view));
	explicit_bzero(view, sizeof(view));
	save_state(app);
	return 0;
}

static void on_clients(void *ctx, int clients)
{
	struct vnc_app *app = ctx;
	uint64_t now = util_now_ms();

	vnc_capture_set_active(app->cap, clients > 0, now);
	if (app->ptr)
		vnc_pointer_set_active(app->ptr, clients > 0, now);
}

static void on_click(void *ctx, int x, int y, int button, uint64_t now_ms)
{
	struct vnc_app *app = ctx;

	vnc_marker_click(vnc_server_marker(app->srv), x, y, button, now_ms);
}

static void on_upgrade(void *ctx, int fd, const char *peer, const char *key)
{
	struct vnc_app *app = ctx;

	vnc_server_adopt(app->srv, fd, peer, true, key);
}

struct vnc_app *vnc_app_start(const struct vnc_options *o, struct err *e)
{
	struct vnc_app *app = calloc(1, sizeof(*app));
	sigset_t mask;
	int http_fd;

	if (!app) {
		err_set(e, ENOMEM, "app");
		return NULL;
	}
	app->opts = *o;
	app->rfb_fd = -1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	app->sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (app->sig_fd == -1) {
		err_set(e, errno, "signalfd");
		goto fail;
	}
	if (vnc_display_open(&app->disp, o->display, e) == -1)
		goto fail;
	app->cap = vnc_capture_new(&app->disp, o->frame_ms, e);
	if (!app->cap)
		goto fail;
	if (!o->view_only) {
		app->in = vnc_input_new(&app->disp, e);
		if (!app->in)
			goto fail;
	}
	/* An earlier run of this start may have been rekeyed: its secret is
	 * the one in force, not the environment's. */
	app->state = vnc_state_open(o->state_dir, o->secret, e);
	if (!app->state)
		goto fail;
	if (vnc_state_secret(app->state)) {
		app->opts.secret = (char *)vnc_state_secret(app->state);
		o = &app->opts;
		log_info("the secret an earlier run was rekeyed to is in force", NULL);
	}
	app->srv = vnc_server_new(o, app->disp.width, app->disp.height,
				  vnc_capture_framebuffer(app->cap), app->in, on_clients, app, e);
	if (!app->srv)
		goto fail;
	vnc_capture_attach(app->cap, vnc_server_screen(app->srv));
	app->resize = vnc_resize_new(&(struct vnc_resize_opts){.d = &app->disp,
							       .cap = app->cap,
							       .srv = app->srv,
							       .in = app->in,
							       .enabled = o->resize,
							       .def_w = o->size_w,
							       .def_h = o->size_h},
				     e);
	if (!app->resize)
		goto fail;
	app->cur = vnc_cursor_new(&app->disp, vnc_server_screen(app->srv), e);
	if (!app->cur)
		goto fail;
	app->ptr = vnc_pointer_new(&app->disp, vnc_server_screen(app->srv), o->frame_ms, on_click,
				   app, e);
	if (!app->ptr)
		goto fail;
	app->clip = vnc_clip_new(o->display, vnc_server_screen(app->srv), e);
	if (!app->clip)
		goto fail;
	if (o->rfb_port) {
		app->rfb_fd = vnc_net_listen(o->listen, o->rfb_port, e);
		if (app->rfb_fd == -1) {
			err_wrap(e, "RFB port");
			goto fail;
		}
	}
	if (o->secret && strlen(o->secret) >= sizeof(app->secret)) {
		err_set(e, 0, "the secret is longer than %d characters", SECRET_TOKEN_MAX);
		goto fail;
	}
	if (o->secret)
		snprintf(app->secret, sizeof(app->secret), "%s", o->secret);
	if (o->secret && sbtoken_view_secret(o->secret, app->view_secret, sizeof(app->view_secret)) == -1) {
		err_set(e, 0, "no view secret");
		goto fail;
	}
	if (o->http_port) {
		http_fd = vnc_net_listen(o->listen, o->http_port, e);
		if (http_fd == -1) {
			err_wrap(e, "HTTP port");
			goto fail;
		}
		app->http = vnc_http_new(http_fd, o->web_dir,
					 &(struct vnc_http_guard){o->allowed_hosts,
								  o->secret ? app->secret : NULL,
								  o->secret ? app->view_secret : NULL},
					 on_upgrade, app, e);
		if (!app->http)
			goto fail;
		vnc_http_set_rekey(app->http, on_rekey, app);
	}
	if (app->in && !o->shared_control) {
		struct err le = ERR_INIT;

		app->lease = vnc_lease_new();
		if (!app->lease) {
			err_set(e, ENOMEM, "lease");
			goto fail;
		}
		app->agent = vnc_agent_new(o->display, app->lease, &le);
		if (app->agent && vnc_state_lease(app->state)) {
			if (vnc_lease_restore(app->lease, vnc_state_lease(app->state),
					      util_now_ms()) == 0)
				log_info("the control lease of an earlier run is taken up", NULL);
			else
				log_warn("the control lease of an earlier run is not one: ignored",
					 NULL);
		}
		if (app->agent) {
			vnc_server_set_lease(app->srv, app->lease);
			if (app->http)
				vnc_http_set_lease(app->http, app->lease);
		} else {
			/* a second server on the display: the first one's lease is
			 * the one the agent asks, so this one cannot have its own */
			log_warn("no control lease here: everyone drives at once", "{s:s}", "error",
				 le.msg);
			vnc_lease_free(app->lease);
			app->lease = NULL;
		}
	}
	XFlush(app->disp.dpy);
	log_info("cloche-vnc started", "{s:s, s:i, s:i, s:s, s:i, s:i, s:s, s:b, s:b, s:s, s:s}",
		 "display", o->display, "width", app->disp.width, "height", app->disp.height,
		 "listen", o->listen, "rfb_port", o->rfb_port, "http_port", o->http_port, "web_dir",
		 o->web_dir, "view_only", o->view_only, "auth", o->password_file != NULL || o->secret != NULL,
		 "control", app->lease ? "lease" : "shared", "version", version_string());
	return app;
fail:
	vnc_app_stop(app);
	return NULL;
}

static void dispatch(struct vnc_app *app, XEvent *ev, uint64_t now)
{
	if (vnc_resize_handle_event(app->resize, ev))
		return;
	if (vnc_capture_handle_event(app->cap, ev, now))
		return;
	if (vnc_cursor_handle_event(app->cur, ev))
		return;
	if (vnc_pointer_handle_event(app->ptr, ev))
		return;
	if (app->in && vnc_input_handle_event(app->in, ev))
		return;
	/* Without input we still see MappingNotify; keep Xlib's cache fresh. */
	if (ev->type == MappingNotify)
		XRefreshKeyboardMapping(&ev->xmapping);
}

static void accept_rfb(struct vnc_app *app)
{
	for (;;) {
		char peer[64];
		int fd = vnc_net_accept(app->rfb_fd, peer, sizeof(peer));

		if (fd == -1) {
			if (errno != EAGAIN && errno != ECONNABORTED)
				log_warn("RFB accept failed", "{s:s}", "error", strerror(errno));
			return;
		}
		vnc_server_adopt(app->srv, fd, peer, false, NULL);
	}
}

static int min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int vnc_app_run(struct vnc_app *app)
{
	Display *dpy = app->disp.dpy;
	struct err e = ERR_INIT;

	for (;;) {
		uint64_t now = util_now_ms();
		size_t n = 0, rfb_at = 0, http_at, http_n = 0, agent_at, agent_n = 0;
		int timeout;

		while (XPending(dpy)) {
			XEvent ev;

			XNextEvent(dpy, &ev);
			dispatch(app, &ev, now);
		}
		if (app->in)
			vnc_input_run(app->in, now);
		vnc_pointer_run(app->ptr, now);
		vnc_marker_run(vnc_server_marker(app->srv), now);
		if (vnc_resize_run(app->resize, &e) == -1) {
			log_error("cannot go on serving this screen", "{s:s}", "error", e.msg);
			return 1;
		}
		vnc_capture_run(app->cap, now);
		vnc_server_process(app->srv);
		vnc_clip_run(app->clip);
		if (app->lease) {
			vnc_lease_tick(app->lease, now, util_wall_ms());
			if (vnc_lease_version(app->lease) != app->lease_seen) {
				app->lease_seen = vnc_lease_version(app->lease);
				save_state(app);
				vnc_agent_deliver(app->agent, now);
				if (app->http)
					vnc_http_lease_changed(app->http, now);
			}
		}
		XFlush(dpy);

		app->fds[n++] = (struct pollfd){.fd = app->sig_fd, .events = POLLIN};
		/* X input itself is read by XPending() at the top of the loop. */
		app->fds[n++] = (struct pollfd){.fd = ConnectionNumber(dpy), .events = POLLIN};
		if (vnc_clip_fd(app->clip) >= 0)
			app->fds[n++] = (struct pollfd){.fd = vnc_clip_fd(app->clip), .events = POLLIN};
		if (app->rfb_fd >= 0) {
			rfb_at = n;
			app->fds[n++] = (struct pollfd){.fd = app->rfb_fd, .events = POLLIN};
		}
		n += vnc_server_pollfds(app->srv, app->fds + n, MAX_POLL - n - 120);
		agent_at = n;
		if (app->agent)
			agent_n = vnc_agent_pollfds(app->agent, app->fds + n, 34);
		n += agent_n;
		http_at = n;
		if (app->http)
			http_n = vnc_http_pollfds(app->http, app->fds + n, MAX_POLL - n, now);
		n += http_n;

		timeout = vnc_capture_timeout_ms(app->cap, now);
		if (app->http)
			timeout = min_timeout(timeout, vnc_http_timeout_ms(app->http, now));
		if (app->in)
			timeout = min_timeout(timeout, vnc_input_timeout_ms(app->in, now));
		timeout = min_timeout(timeout, vnc_pointer_timeout_ms(app->ptr, now));
		if (app->lease)
			timeout = min_timeout(timeout, vnc_lease_timeout_ms(app->lease, now));
		timeout = min_timeout(timeout,
				      vnc_marker_timeout_ms(vnc_server_marker(app->srv), now));
		if (XQLength(dpy) > 0 || vnc_resize_timeout_ms(app->resize) == 0)
			timeout = 0;

		if (poll(app->fds, n, timeout) == -1 && errno != EINTR) {
			log_error("poll failed", "{s:s}", "error", strerror(errno));
			return 1;
		}
		now = util_now_ms();
		if (app->fds[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(app->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				log_info("stopping on signal", "{s:s}", "signal",
					 strsignal((int)si.ssi_signo));
				return 0;
			}
		}
		if (app->rfb_fd >= 0 && (app->fds[rfb_at].revents & POLLIN))
			accept_rfb(app);
		if (app->http)
			vnc_http_process(app->http, app->fds + http_at, http_n, now);
		if (app->agent)
			vnc_agent_process(app->agent, app->fds + agent_at, agent_n, now);
	}
}

void vnc_app_stop(struct vnc_app *app)
{
	if (!app)
		return;
	if (app->cap)
		vnc_capture_log_stats(app->cap);
	vnc_http_free(app->http);
	vnc_agent_free(app->agent);
	if (app->rfb_fd >= 0)
		close(app->rfb_fd);
	vnc_resize_free(app->resize);
	/* The server first: it owns the cursor and uses the framebuffer. */
	vnc_server_free(app->srv);
	vnc_lease_free(app->lease);
	vnc_state_free(app->state);
	vnc_pointer_free(app->ptr);
	vnc_clip_free(app->clip);
	vnc_cursor_free(app->cur);
	vnc_input_free(app->in);
	vnc_capture_free(app->cap);
	vnc_display_close(&app->disp);
	if (app->sig_fd >= 0)
		close(app->sig_fd);
	explicit_bzero(app->secret, sizeof(app->secret));
	explicit_bzero(app->view_secret, sizeof(app->view_secret));
	free(app);
}
