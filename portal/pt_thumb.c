/* Thumbnails of sandbox screens for the dashboard:
 * GET /sbv1/sandboxes/{id}/thumbnail?width=N -> image/png.
 *
 * The picture comes from the sandbox's node (GET /v1/sandboxes/{sid}/
 * thumbnail, which asks the sandbox's mcp-desktop), on a node-call thread.
 * It stays cheap for the sandbox however many people watch: one picture per
 * sandbox and width is kept for PT_THUMB_FRESH_MS and served to everyone
 * who asks meanwhile, requests that arrive while one is being fetched wait
 * for it, and nothing is fetched unless asked (the dashboard asks only for
 * thumbnails on screen, in a visible tab).  Pictures nobody asked for in a
 * minute are dropped. */
#include "portal/pt_thumb.h"
#include "portal/pt_desk.h"
#include "portal/pt_core.h"
#include "portal/pt_nodes.h"

#include "common/b64.h"
#include "common/log.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

#define PT_THUMB_FRESH_MS 2000
#define PT_THUMB_DROP_MS 60000
/* How long what a picture said of the desktop's control is shown. */
#define PT_THUMB_DESKTOP_MS 30000
/* Widths kept per sandbox: a dashboard asks for two (card and detail); a
 * client walking through every width would otherwise make the portal hold
 * hundreds of pictures of one sandbox. */
#define PT_THUMB_WIDTHS 4

struct thumb_waiter {
	struct hsrv_defer *d;
	struct thumb_waiter *next;
};

struct pt_thumb {
	struct pt_thumb *next;
	char id[32];
	int width;
	unsigned char *png;
	size_t len;
	uint64_t at;         /* monotonic ms of the picture */
	uint64_t asked;      /* monotonic ms of the last request */
	json_t *control;     /* who drove the desktop at the picture, or NULL */
	bool fetching;
	struct thumb_waiter *waiters;
};

static void thumb_free(struct pt_thumb *t)
{
	free(t->png);
	json_decref(t->control);
	free(t);
}

static void waiter_gone(void *ud)
{
	(void)ud; /* the waiter is answered (and dropped) when the fetch ends */
}

static void png_resp(struct hsrv_resp *r, const struct pt_thumb *t)
{
	r->status = 200;
	snprintf(r->content_type, sizeof(r->content_type), "image/png");
	r->body = malloc(t->len ? t->len : 1);
	if (!r->body) {
		hsrv_resp_error(r, 500, NULL, "out of memory");
		return;
	}
	memcpy(r->body, t->png, t->len);
	r->body_len = t->len;
	hsrv_resp_header(r, "Cache-Control", "no-store");
}

/* Drops pictures nobody asked for lately (not while being fetched). */
static void sweep(struct pt_portal *p, uint64_t now)
{
	for (struct pt_thumb **pp = &p->thumbs; *pp;) {
		struct pt_thumb *t = *pp;

		if (!t->fetching && now - t->asked > PT_THUMB_DROP_MS) {
			*pp = t->next;
			thumb_free(t);
		} else {
			pp = &t->next;
		}
	}
}

/* Before a new width of sandbox id is kept: when it has PT_THUMB_WIDTHS
 * already, drops the one asked for least lately (not one being fetched,
 * whose requests wait for it). */
static void make_room(struct pt_portal *p, const char *id)
{
	struct pt_thumb **oldest = NULL;
	int n = 0;

	for (struct pt_thumb **pp = &p->thumbs; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, id) != 0)
			continue;
		n++;
		if (!(*pp)->fetching && (!oldest || (*pp)->asked < (*oldest)->asked))
			oldest = pp;
	}
	if (n >= PT_THUMB_WIDTHS && oldest) {
		struct pt_thumb *t = *oldest;

		*oldest = t->next;
		thumb_free(t);
	}
}

void pt_thumb_get(struct pt_portal *p, const struct pt_sb *sb, int width,
		  const struct hsrv_req *req, struct hsrv_resp *resp)
{
	uint64_t now = util_now_ms();
	struct pt_thumb *t;
	struct pt_node *n;
	struct thumb_waiter *w;
	struct pt_job *j;
	struct err e = ERR_INIT;

	sweep(p, now);
	if (sb->state != PT_READY) {
		char msg[96];

		snprintf(msg, sizeof(msg), "the sandbox is %s: only a running one has a screen",
			 pt_state_name(sb->state));
		hsrv_resp_error(resp, 409, NULL, msg);
		return;
	}
	n = pt_nodes_find(p, sb->node);
	if (!n || !n->up) {
		hsrv_resp_error(resp, 503, NULL, "the sandbox's node is not answering");
		return;
	}
	for (t = p->thumbs; t; t = t->next)
		if (t->width == width && strcmp(t->id, sb->id) == 0)
			break;
	if (!t) {
		make_room(p, sb->id);
		t = calloc(1, sizeof(*t));
		if (!t) {
			hsrv_resp_error(resp, 500, NULL, "out of memory");
			return;
		}
		snprintf(t->id, sizeof(t->id), "%s", sb->id);
		t->width = width;
		t->next = p->thumbs;
		p->thumbs = t;
	}
	t->asked = now;
	if (t->png && now - t->at < PT_THUMB_FRESH_MS) {
		p->metrics.thumbs_cached++;
		png_resp(resp, t);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->d = hsrv_defer(req, waiter_gone, w))) {
		free(w);
		hsrv_resp_error(resp, 500, NULL, "out of memory");
		return;
	}
	w->next = t->waiters;
	t->waiters = w;
	if (t->fetching) {
		p->metrics.thumbs_cached++; /* it gets the picture being fetched */
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		goto fail;
	j->kind = PT_JOB_THUMBNAIL;
	snprintf(j->node, sizeof(j->node), "%s", n->name);
	snprintf(j->url, sizeof(j->url), "%s", n->url);
	snprintf(j->id, sizeof(j->id), "%s", sb->id);
	snprintf(j->sid, sizeof(j->sid), "%s", sb->node_sid);
	snprintf(j->prefix, sizeof(j->prefix), "%d", width);
	if (pt_job_start(p, j, &e) == -1) {
		free(j);
		goto fail;
	}
	t->fetching = true;
	return;
fail:
	t->waiters = w->next;
	{
		struct hsrv_resp r = {0};

		hsrv_resp_error(&r, 500, NULL, "cannot fetch the thumbnail");
		hsrv_defer_reply(w->d, &r);
	}
	free(w);
}

/* The node's answer {mime, data: base64 PNG}: the PNG bytes, or NULL. */
static unsigned char *decode(const json_t *out, size_t *len)
{
	const char *b64 = json_string_value(json_object_get(out, "data"));
	size_t n = b64 ? strlen(b64) : 0;
	unsigned char *png;
	ssize_t r;

	if (!n || n > (8u << 20))
		return NULL;
	png = malloc(b64_decoded_max(n));
	if (!png)
		return NULL;
	r = b64_decode(b64, n, 0, png, b64_decoded_max(n));
	if (r < 0) {
		free(png);
		return NULL;
	}
	*len = (size_t)r;
	return png;
}

void pt_thumb_job_done(struct pt_portal *p, struct pt_job *j)
{
	struct pt_thumb *t;
	struct thumb_waiter *w;
	unsigned char *png = NULL;
	size_t len = 0;

	for (t = p->thumbs; t; t = t->next)
		if (t->width == atoi(j->prefix) && strcmp(t->id, j->id) == 0)
			break;
	if (!t)
		return;
	t->fetching = false;
	if (j->status == 200)
		png = decode(j->out, &len);
	if (png) {
		p->metrics.thumbs_fetched++;
		free(t->png);
		t->png = png;
		t->len = len;
		t->at = util_now_ms();
		json_decref(t->control);
		t->control = pt_desk_clean(json_object_get(j->out, "control"));
	} else {
		p->metrics.thumbs_failed++;
		log_info("thumbnail failed", "{s:s, s:s, s:s}", "id", j->id, "node", j->node, "error",
			 j->msg[0] ? j->msg : "not a PNG");
	}
	while ((w = t->waiters)) {
		struct hsrv_resp r = {0};

		t->waiters = w->next;
		if (png) {
			png_resp(&r, t);
		} else {
			int st = j->status == 409 || j->status == 404 ? 409 : 502;

			hsrv_resp_error(&r, st, NULL, j->msg[0] ? j->msg : "the node gave no picture");
		}
		hsrv_defer_reply(w->d, &r);
		free(w);
	}
}

json_t *pt_thumb_desktop(const struct pt_portal *p, const char *id)
{
	const struct pt_thumb *best = NULL;
	uint64_t now = util_now_ms();
	char when[32];
	json_t *out;

	for (const struct pt_thumb *t = p->thumbs; t; t = t->next)
		if (t->control && strcmp(t->id, id) == 0 && (!best || t->at > best->at))
			best = t;
	if (!best || now - best->at > PT_THUMB_DESKTOP_MS)
		return NULL;
	out = json_deep_copy(best->control);
	util_rfc3339_s(util_wall_ms() - (int64_t)(now - best->at), when, sizeof(when));
	if (out)
		json_object_set_new(out, "seen_at", json_string(when));
	return out;
}

void pt_thumb_free_all(struct pt_portal *p)
{
	while (p->thumbs) {
		struct pt_thumb *t = p->thumbs;

		p->thumbs = t->next;
		while (t->waiters) {
			struct thumb_waiter *w = t->waiters;

			t->waiters = w->next;
			hsrv_defer_end(w->d);
			free(w);
		}
		thumb_free(t);
	}
}
