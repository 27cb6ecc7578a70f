/* libvncserver glue; see server.h.
 *
 * libvncserver runs single-threaded here: the main loop polls its sockets
 * together with the X connection and calls rfbProcessEvents() with a zero
 * timeout, so no libvncserver thread or timer ever wakes the process while
 * nothing happens.  Its own log output is routed into the JSON logger. */
#include "server.h"

#include "common/log.h"
#include "common/sbtoken.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct vnc_client {
	unsigned long id;
	uint64_t since_ms;
	char peer[64];
	int buttons; /* the last button mask this viewer sent */
	char key[VNC_LEASE_KEY_MAX]; /* its page's key, or "rfb:<id>" */
	bool implicit;               /* no page key: a plain VNC client */
};

struct vnc_server {
	rfbScreenInfoPtr screen;
	struct vnc_input *in;
	struct vnc_marker *marker;
	bool view_only;
	char *passwords[3]; /* NULL-terminated list for rfbCheckPasswordByList */
	vnc_server_clients_fn on_clients;
	void *ctx;
	int clients;
	unsigned long next_id;
	const char *adopt_peer; /* peer of the socket being adopted right now */
	bool adopt_via_web;     /* ... and whether the web port checked it */
	const char *adopt_key;  /* ... and its page's viewer key, or NULL */
	struct vnc_lease *lease; /* who may drive the desktop; NULL: anyone */
	struct vnc_server_resize resize;
};

/* libvncserver's messages are chatty and line-oriented; strip the newline
 * and keep them as debug lines (rfbLog) or warnings (rfbErr). */
static void rfb_vlog(enum log_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (n > 0)
		log_emit(level, "libvncserver", "{s:s}", "detail", line);
}

static void rfb_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rfb_vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

/* A viewer closing its connection is reported by libvncserver as an error
 * ("read: Connection reset by peer"); that is routine, not a warning. */
static bool routine_disconnect(const char *fmt, va_list ap)
{
	char line[512];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(line, sizeof(line), fmt, copy);
	va_end(copy);
	return strstr(line, "Connection reset by peer") || strstr(line, "Broken pipe") ||
	       strstr(line, "client gone");
}

static void rfb_err(const char *fmt, ...)
{
	va_list ap;
	bool routine;

	va_start(ap, fmt);
	routine = routine_disconnect(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	rfb_vlog(routine ? LOG_DEBUG : LOG_WARN, fmt, ap);
	va_end(ap);
}

bool vnc_server_may_input(rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;
	struct vnc_client *c = cl->clientData;

	if (cl->viewOnly || s->view_only || !c)
		return false;
	return !s->lease ||
	       vnc_lease_may_input(s->lease, c->key, c->implicit, util_now_ms(), util_wall_ms());
}

static void on_key(rfbBool down, rfbKeySym ks, rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;

	/* A release always goes through: a key pressed while this viewer had
	 * control must not stay down after it lost it. */
	if (s->in && (down ? vnc_server_may_input(cl) : !cl->viewOnly && !s->view_only))
		vnc_input_key(s->in, down != 0, (uint32_t)ks);
}

/* Announces the viewer's new presses of buttons 1-3 to the click markers,
 * so that its own clicks get no ring on its own screen. */
static void announce_presses(struct vnc_server *s, struct vnc_client *c, int mask,
			     rfbClientPtr cl)
{
	int pressed = mask & ~c->buttons;

	c->buttons = mask;
	for (int b = 0; b < 3; b++)
		if (pressed & (1 << b))
			vnc_marker_expect(s->marker, cl, b + 1, util_now_ms());
}

static void on_pointer(int mask, int x, int y, rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;

	/* a viewer who logged in with the view secret watches only (libvncserver
	 * drops its input too) */
	if (cl->viewOnly)
		return;
	if (s->in && !vnc_server_may_input(cl)) {
		struct vnc_client *c = cl->clientData;

		/* watching: only let go of buttons held from before */
		if (c && c->buttons && !s->view_only) {
			c->buttons = 0;
			vnc_input_pointer(s->in, 0, x, y);
		}
		return;
	}
	if (s->in && !s->view_only) {
		if (cl->clientData)
			announce_presses(s, cl->clientData, mask, cl);
		vnc_input_pointer(s->in, mask, x, y);
	}
	/* Moves the painted cursor at once, without waiting for X to say
	 * where the pointer went. */
	rfbDefaultPtrAddEvent(mask, x, y, cl);
}

/* Before each update: the cursor is painted into the frames of every
 * viewer (see vnc_server_new), and so are the click rings it should see. */
static void on_display(rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;

	cl->enableCursorShapeUpdates = FALSE;
	vnc_marker_paint(s->marker, cl);
}

static void on_display_done(rfbClientPtr cl, int result)
{
	struct vnc_server *s = cl->screen->screenData;

	(void)result;
	vnc_marker_unpaint(s->marker);
}

static void on_client_gone(rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;
	struct vnc_client *c = cl->clientData;

#ifdef LIBVNCSERVER_WITH_WEBSOCKETS
	/* libvncserver (0.9.14 and later) never frees the WebSocket state it
	 * allocated in one piece during the handshake: 45 KB per noVNC visit.
	 * Nothing reads it once the client is gone. */
	free(cl->wsctx);
	cl->wsctx = NULL;
#endif
	vnc_marker_client_gone(s->marker, cl);
	if (s->resize.gone)
		s->resize.gone(s->resize.ctx, cl);
	if (!c)
		return;
	if (s->lease)
		vnc_lease_viewer_leave(s->lease, c->key, util_now_ms());
	log_info("client disconnected", "{s:s, s:I, s:I}", "addr", c->peer, "client",
		 (json_int_t)c->id, "duration_ms", (json_int_t)(util_now_ms() - c->since_ms));
	free(c);
	cl->clientData = NULL;
	s->clients--;
	if (s->clients == 0 && s->in)
		vnc_input_release_all(s->in); /* no stuck keys when a viewer drops */
	if (s->on_clients)
		s->on_clients(s->ctx, s->clients);
}

static enum rfbNewClientAction on_new_client(rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;
	struct vnc_client *c = calloc(1, sizeof(*c));
	const char *transport = "rfb";

	if (!c) {
		log_error("out of memory for a new client", NULL);
		return RFB_CLIENT_REFUSE;
	}
#ifdef LIBVNCSERVER_WITH_WEBSOCKETS
	if (cl->wsctx)
		transport = "websocket";
#endif
	/* libvncserver answers a WebSocket handshake on any socket; only the
	 * web port checks Host, Origin and the secret first. */
	if (strcmp(transport, "websocket") == 0 && !s->adopt_via_web) {
		log_warn("refused a WebSocket on the RFB port (use the web port)", "{s:s}", "addr",
			 s->adopt_peer ? s->adopt_peer : "unknown");
		free(c);
		return RFB_CLIENT_REFUSE;
	}
	c->id = ++s->next_id;
	c->since_ms = util_now_ms();
	if (s->adopt_peer)
		snprintf(c->peer, sizeof(c->peer), "%s", s->adopt_peer);
	else
		snprintf(c->peer, sizeof(c->peer), "%s", cl->host ? cl->host : "unknown");
	if (s->adopt_key && s->adopt_key[0]) {
		snprintf(c->key, sizeof(c->key), "%s", s->adopt_key);
	} else {
		snprintf(c->key, sizeof(c->key), "rfb:%lu", c->id);
		c->implicit = true;
	}
	if (s->lease)
		vnc_lease_viewer_join(s->lease, c->key);
	cl->clientData = c;
	cl->clientGoneHook = on_client_gone;
	if (s->view_only)
		cl->viewOnly = TRUE;
	s->clients++;
	log_info("client connected", "{s:s, s:I, s:s, s:b, s:i}", "addr", c->peer, "client",
		 (json_int_t)c->id, "transport", transport, "view_only",
		 s->view_only, "clients", s->clients);
	if (s->on_clients)
		s->on_clients(s->ctx, s->clients);
	return RFB_CLIENT_ACCEPT;
}

/* Reads the first line of path as the VNC password into a new string. */
static char *read_password(const char *path, struct err *e)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[256];
	ssize_t n;
	size_t len;
	char *pw;

	if (fd == -1) {
		err_set(e, errno, "open password file `%s`", path);
		return NULL;
	}
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n == -1 && errno == EINTR);
	if (n == -1) {
		err_set(e, errno, "read password file `%s`", path);
		return NULL;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (len == 0) {
		err_set(e, 0, "password file `%s` has an empty first line", path);
		return NULL;
	}
	if (len > 8)
		log_warn("VNC authentication uses only the first 8 bytes of the password",
			 "{s:s}", "file", path);
	pw = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	if (!pw)
		err_set(e, ENOMEM, "password");
	return pw;
}

struct vnc_server *vnc_server_new(const struct vnc_options *o, int width, int height, char *fb,
				  struct vnc_input *in, vnc_server_clients_fn on_clients,
				  void *ctx, struct err *e)
{
	struct vnc_server *s = calloc(1, sizeof(*s));
	rfbScreenInfoPtr sc;

	if (!s) {
		err_set(e, ENOMEM, "server");
		return NULL;
	}
	s->in = in;
	s->view_only = o->view_only;
	s->on_clients = on_clients;
	s->ctx = ctx;
	if (o->password_file) {
		s->passwords[0] = read_password(o->password_file, e);
		if (!s->passwords[0]) {
			free(s);
			return NULL;
		}
	} else if (o->secret) {
		/* The sandbox's secret doubles as the VNC password, for clients on
		 * the RFB port (VNC authentication reads its first 8 bytes). */
		s->passwords[0] = strdup(o->secret);
		/* and its view secret is a second password, whose viewers
		 * libvncserver keeps view-only (share links that may only
		 * watch: docs/vnc.md) */
		s->passwords[1] = malloc(48);
		if (!s->passwords[0] || !s->passwords[1] ||
		    sbtoken_view_secret(o->secret, s->passwords[1], 48) == -1) {
			free(s->passwords[0]);
			free(s->passwords[1]);
			free(s);
			err_set(e, ENOMEM, "password");
			return NULL;
		}
	}
	rfbLog = rfb_log;
	rfbErr = rfb_err;
	sc = rfbGetScreen(NULL, NULL, width, height, 8, 3, 4);
	if (!sc) {
		vnc_server_free(s);
		err_set(e, 0, "libvncserver could not create a %dx%d screen", width, height);
		return NULL;
	}
	s->screen = sc;
	sc->screenData = s;
	s->marker = vnc_marker_new(sc, e);
	if (!s->marker) {
		vnc_server_free(s);
		return NULL;
	}
	sc->frameBuffer = fb;
	sc->desktopName = o->name;
	/* Xvfb's 24-bit visual: 0x00RRGGBB in a little-endian 32-bit word. */
	sc->serverFormat.bitsPerPixel = 32;
	sc->serverFormat.depth = 24;
	sc->serverFormat.trueColour = TRUE;
	sc->serverFormat.bigEndian = FALSE;
	sc->serverFormat.redMax = 255;
	sc->serverFormat.greenMax = 255;
	sc->serverFormat.blueMax = 255;
	sc->serverFormat.redShift = 16;
	sc->serverFormat.greenShift = 8;
	sc->serverFormat.blueShift = 0;
	sc->alwaysShared = TRUE;
	sc->neverShared = FALSE;
	/* Our listeners, not libvncserver's (see server.h). */
	sc->port = 0;
	sc->ipv6port = 0;
	sc->httpDir = NULL;
	sc->autoPort = FALSE;
	/* The capture already coalesces; no extra latency, and no timers that
	 * would need the loop to wake up. */
	sc->deferUpdateTime = 0;
	sc->deferPtrUpdateTime = 0;
	sc->handleEventsEagerly = FALSE;
	sc->newClientHook = on_new_client;
	sc->kbdAddEvent = on_key;
	sc->ptrAddEvent = on_pointer;
	/* Every viewer gets the cursor painted into its frames at the X
	 * pointer's position (pointer.c) rather than a shape to draw itself:
	 * a viewer drawing its own cursor (noVNC) cannot be told where the
	 * pointer went when someone else moved it.  on_display overrides the
	 * RichCursor/XCursor choice a viewer makes in SetEncodings. */
	sc->displayHook = on_display;
	sc->displayFinishedHook = on_display_done;
	sc->cursor = NULL;
	if (s->passwords[0]) {
		sc->authPasswdData = s->passwords;
		sc->passwordCheck = rfbCheckPasswordByList;
		if (s->passwords[1])
			sc->authPasswdFirstViewOnly = 1;
	}
	rfbInitServer(sc);
	return s;
}

static int on_set_desktop_size(int w, int h, int nscreens, struct rfbExtDesktopScreen *screens,
			       rfbClientPtr cl)
{
	struct vnc_server *s = cl->screen->screenData;

	(void)screens;
	return s->resize.request(s->resize.ctx, cl, w, h, nscreens);
}

void vnc_server_on_resize(struct vnc_server *s, const struct vnc_server_resize *r)
{
	s->resize = *r;
	s->screen->setDesktopSizeHook = on_set_desktop_size;
}

rfbScreenInfoPtr vnc_server_screen(struct vnc_server *s)
{
	return s->screen;
}

struct vnc_marker *vnc_server_marker(struct vnc_server *s)
{
	return s->marker;
}

void vnc_server_adopt(struct vnc_server *s, int fd, const char *peer, bool via_web,
		      const char *key)
{
	log_debug("connection handed to libvncserver", "{s:s, s:b}", "addr", peer, "web", via_web);
	s->adopt_peer = peer;
	s->adopt_via_web = via_web;
	s->adopt_key = key;
	rfbNewClientConnection(s->screen, fd);
	s->adopt_peer = NULL;
	s->adopt_via_web = false;
	s->adopt_key = NULL;
}

void vnc_server_set_lease(struct vnc_server *s, struct vnc_lease *lease)
{
	s->lease = lease;
}

size_t vnc_server_pollfds(struct vnc_server *s, struct pollfd *fds, size_t cap)
{
	size_t n = 0;

	for (int fd = 0; fd <= s->screen->maxFd && n < cap; fd++) {
		if (FD_ISSET(fd, &s->screen->allFds))
			fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
	}
	return n;
}

void vnc_server_process(struct vnc_server *s)
{
	rfbProcessEvents(s->screen, 0);
}

int vnc_server_clients(const struct vnc_server *s)
{
	return s->clients;
}

int vnc_server_set_secret(struct vnc_server *s, const char *secret, const char *view,
			  struct err *e)
{
	char *pw, *vpw;

	if (!s->passwords[1])
		return 0; /* the password is a file's, or there is none */
	pw = strdup(secret);
	vpw = strdup(view);
	if (!pw || !vpw) {
		free(pw);
		free(vpw);
		return err_set(e, ENOMEM, "password");
	}
	for (int i = 0; i < 2; i++) {
		explicit_bzero(s->passwords[i], strlen(s->passwords[i]));
		free(s->passwords[i]);
	}
	s->passwords[0] = pw;
	s->passwords[1] = vpw;
	return 0;
}

void vnc_server_free(struct vnc_server *s)
{
	if (!s)
		return;
	if (s->screen) {
		rfbShutdownServer(s->screen, TRUE);
		rfbScreenCleanup(s->screen);
	}
	vnc_marker_free(s->marker);
	for (int i = 0; s->passwords[i]; i++) {
		explicit_bzero(s->passwords[i], strlen(s->passwords[i]));
		free(s->passwords[i]);
	}
	free(s);
}
