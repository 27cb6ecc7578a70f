/* Viewers' cut text <-> the X clipboard; see clip.h.
 *
 * Loops are cut in two places.  The selection module never reports our
 * own sets as news, so a viewer's text does not come back to the viewers
 * as a copy of someone else's.  And the last text that crossed, either
 * way, is remembered: a viewer sending back what it just received (or an
 * X client copying again what a viewer sent) changes nothing. */
#include "clip.h"
#include "server.h"

#include "appliance/x11/x11_clip.h"

#include "common/log.h"
#include "common/utf8.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct vnc_clip {
	struct x11_clip *x;   /* NULL when the clipboard is off */
	rfbScreenInfoPtr screen;
	char *last;           /* the text that crossed last, UTF-8 */
	size_t last_len;
};

/* libvncserver's cut-text hooks get only the client: they find the
 * handle here. */
static struct vnc_clip *the_clip;

/* Whether text is the one that crossed last; if not, it becomes it. */
static bool same_as_last(struct vnc_clip *c, const char *text, size_t len)
{
	char *copy;

	if (c->last && c->last_len == len && memcmp(c->last, text, len) == 0)
		return true;
	copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = '\0';
	}
	free(c->last);
	c->last = copy;
	c->last_len = copy ? len : 0;
	return false;
}

/* A viewer's text, as UTF-8: onto the X selections. */
static void from_viewer(struct vnc_clip *c, const char *text, size_t len)
{
	struct err e = ERR_INIT;

	if (len > x11_clip_max(c->x)) {
		log_warn("refused a viewer's clipboard text over the limit", "{s:I, s:I}", "bytes",
			 (json_int_t)len, "limit", (json_int_t)x11_clip_max(c->x));
		return;
	}
	if (same_as_last(c, text, len))
		return;
	if (x11_clip_offer(c->x, text, len, &e) == -1) {
		log_warn("cannot take a viewer's clipboard text", "{s:s}", "error", e.msg);
		return;
	}
	log_info("clipboard from a viewer", "{s:I}", "bytes", (json_int_t)len);
}

/* Plain ClientCutText: Latin-1 by the RFB specification. */
static void on_cut_text(char *str, int len, rfbClientPtr cl)
{
	char *text;
	size_t n;

	if (!the_clip || len < 0 || !vnc_server_may_input(cl))
		return;
	if (utf8_clean(str, (size_t)len, true, &text, &n) == -1) {
		log_warn("out of memory for a viewer's clipboard text", NULL);
		return;
	}
	from_viewer(the_clip, text, n);
	free(text);
}

/* The extended clipboard's text: UTF-8 with CRLF line ends and, from
 * noVNC, a trailing NUL.  X programs expect LF. */
static void on_cut_text_utf8(char *str, int len, rfbClientPtr cl)
{
	char *text, *w;
	size_t n;

	if (!the_clip || len < 0 || !vnc_server_may_input(cl))
		return;
	if (utf8_clean(str, strnlen(str, (size_t)len), false, &text, &n) == -1) {
		log_warn("out of memory for a viewer's clipboard text", NULL);
		return;
	}
	w = text;
	for (size_t i = 0; i < n; i++)
		if (!(text[i] == '\r' && i + 1 < n && text[i + 1] == '\n'))
			*w++ = text[i];
	*w = '\0';
	from_viewer(the_clip, text, (size_t)(w - text));
	free(text);
}

struct hidden {
	rfbClientPtr cl;
	rfbSocket sock;
};

/* Hides the watch-only viewers from libvncserver's client iteration, for
 * one send: its iterator skips clients whose socket is closed.  Returns
 * them (malloc'ed, *n of them, NULL when none); false when out of memory. */
static bool hide_watchers(rfbScreenInfoPtr screen, struct hidden **out, size_t *n)
{
	rfbClientIteratorPtr it = rfbGetClientIterator(screen);
	struct hidden *h;
	rfbClientPtr cl;
	size_t count = 0;

	*out = NULL;
	*n = 0;
	while ((cl = rfbClientIteratorNext(it)) != NULL)
		count += cl->viewOnly != 0;
	rfbReleaseClientIterator(it);
	if (count == 0)
		return true;
	h = calloc(count, sizeof(*h));
	if (!h)
		return false;
	it = rfbGetClientIterator(screen);
	while (*n < count && (cl = rfbClientIteratorNext(it)) != NULL) {
		if (cl->viewOnly)
			h[(*n)++] = (struct hidden){cl, cl->sock};
	}
	rfbReleaseClientIterator(it);
	for (size_t i = 0; i < *n; i++)
		h[i].cl->sock = RFB_INVALID_SOCKET;
	*out = h;
	return true;
}

/* Text an X client copied: to every viewer that may control, not to those
 * who only watch (the clipboard may hold what the screen does not show).
 * libvncserver sends viewers of the extended clipboard the UTF-8 (noVNC
 * 1.3 asks for it after a notification, since it takes no unsolicited
 * text) and the others the Latin-1 fallback.  (Its send must always get a
 * fallback: 0.9.14 leaves a plain viewer's send lock held without one.) */
static void to_viewers(struct vnc_clip *c, char *text, size_t len)
{
	struct hidden *hidden = NULL;
	char *latin1 = NULL;
	size_t n, nh;

	if (same_as_last(c, text, len))
		return;
	if (utf8_to_latin1(text, len, &latin1, &n) == -1 ||
	    !hide_watchers(c->screen, &hidden, &nh)) {
		log_warn("out of memory for the clipboard's text", NULL);
		free(latin1);
		return;
	}
	rfbSendServerCutTextUTF8(c->screen, text, (int)len, latin1, (int)n);
	for (size_t i = 0; i < nh; i++)
		hidden[i].cl->sock = hidden[i].sock;
	free(hidden);
	free(latin1);
	log_info("clipboard to viewers", "{s:I}", "bytes", (json_int_t)len);
}

struct vnc_clip *vnc_clip_new(const char *name, rfbScreenInfoPtr screen, struct err *e)
{
	struct vnc_clip *c = calloc(1, sizeof(*c));

	if (!c) {
		err_set(e, ENOMEM, "clipboard");
		return NULL;
	}
	c->screen = screen;
	if (!x11_clip_env_enabled()) {
		log_info("clipboard exchange is off (" X11_CLIP_ENV ")", NULL);
		return c;
	}
	c->x = x11_clip_open(name, 0, X11_CLIP_WATCH | X11_CLIP_PRIMARY, e);
	if (!c->x) {
		free(c);
		return NULL;
	}
	the_clip = c;
	screen->setXCutText = on_cut_text;
	/* Also makes libvncserver offer the extended clipboard to viewers. */
	screen->setXCutTextUTF8 = on_cut_text_utf8;
	return c;
}

int vnc_clip_fd(const struct vnc_clip *c)
{
	return c->x ? x11_clip_fd(c->x) : -1;
}

void vnc_clip_run(struct vnc_clip *c)
{
	char *text;
	size_t len;

	if (c->x && x11_clip_take(c->x, &text, &len) == 1) {
		to_viewers(c, text, len);
		free(text);
	}
}

void vnc_clip_free(struct vnc_clip *c)
{
	if (!c)
		return;
	/* The hooks stay on the screen (which may be gone by now) and find no
	 * handle. */
	if (the_clip == c)
		the_clip = NULL;
	x11_clip_close(c->x);
	free(c->last);
	free(c);
}
