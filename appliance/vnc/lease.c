/* The control lease's state; see lease.h. */
#include "lease.h"

#include "common/utf8.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VIEWERS 128

struct viewer {
	char key[VNC_LEASE_KEY_MAX];
	int conns;
};

struct help {
	unsigned id; /* 0: free slot */
	char reason[VNC_LEASE_REASON_MAX];
	int64_t since_wall;
	bool waiting;        /* a caller waits on it */
	uint64_t orphan_end; /* !waiting: dropped at this time */
	struct vnc_lease_answer answer;
};

struct vnc_lease {
	unsigned version;
	struct viewer viewers[MAX_VIEWERS];
	int nviewers;
	/* the holder, when holder[0] */
	char holder[VNC_LEASE_KEY_MAX];
	bool implicit;
	int64_t since_wall;
	uint64_t last_input; /* implicit: lapses VNC_LEASE_IMPLICIT_MS after */
	uint64_t gone_at;    /* the holder's last connection left (0: connected) */
	int agent_busy;
	/* the last hand-back, until the agent is told */
	bool handback_pending;
	struct vnc_lease_answer handback;
	struct help help[VNC_LEASE_MAX_HELP];
	unsigned next_help;
};

struct vnc_lease *vnc_lease_new(void)
{
	return calloc(1, sizeof(struct vnc_lease));
}

void vnc_lease_free(struct vnc_lease *l)
{
	free(l);
}

unsigned vnc_lease_version(const struct vnc_lease *l)
{
	return l->version;
}

static struct viewer *viewer_find(struct vnc_lease *l, const char *key)
{
	for (int i = 0; i < l->nviewers; i++)
		if (strcmp(l->viewers[i].key, key) == 0)
			return &l->viewers[i];
	return NULL;
}

void vnc_lease_viewer_join(struct vnc_lease *l, const char *key)
{
	struct viewer *v = viewer_find(l, key);

	if (!v) {
		if (l->nviewers == MAX_VIEWERS)
			return; /* not known: it cannot take the lease */
		v = &l->viewers[l->nviewers++];
		snprintf(v->key, sizeof(v->key), "%s", key);
		v->conns = 0;
	}
	v->conns++;
	if (l->holder[0] && strcmp(l->holder, key) == 0)
		l->gone_at = 0; /* back within the grace */
	l->version++;
}

static void release(struct vnc_lease *l)
{
	l->holder[0] = '\0';
	l->implicit = false;
	l->gone_at = 0;
	l->version++;
}

void vnc_lease_viewer_leave(struct vnc_lease *l, const char *key, uint64_t now)
{
	struct viewer *v = viewer_find(l, key);

	if (!v)
		return;
	l->version++;
	if (--v->conns > 0)
		return;
	*v = l->viewers[--l->nviewers];
	if (!l->holder[0] || strcmp(l->holder, key) != 0)
		return;
	if (l->implicit)
		release(l); /* a plain VNC client that left */
	else
		l->gone_at = now ? now : 1; /* its page may come back (reconnect, reload) */
}

/* Copies s into out (cap bytes) cut on a UTF-8 character boundary. */
static void copy_text(char *out, size_t cap, const char *s)
{
	size_t n = s ? utf8_cut(s, strlen(s), cap - 1) : 0;

	if (n)
		memcpy(out, s, n);
	out[n] = '\0';
}

enum vnc_lease_refusal vnc_lease_take(struct vnc_lease *l, const char *key, int64_t wall)
{
	if (!key[0] || !viewer_find(l, key))
		return VNC_LEASE_NO_VIEWER;
	if (l->holder[0] && strcmp(l->holder, key) == 0 && !l->implicit)
		return VNC_LEASE_OK;
	snprintf(l->holder, sizeof(l->holder), "%s", key);
	l->implicit = false;
	l->since_wall = wall;
	l->gone_at = 0;
	l->version++;
	return VNC_LEASE_OK;
}

/* Gives every waiting or orphaned help request answer a; how many. */
static int answer_all(struct vnc_lease *l, const struct vnc_lease_answer *a)
{
	int n = 0;

	for (int i = 0; i < VNC_LEASE_MAX_HELP; i++)
		if (l->help[i].id && !l->help[i].answer.answered) {
			l->help[i].answer = *a;
			n++;
		}
	return n;
}

/* The person's turn ended: help requests get their answer, or else the
 * agent hears of it with its next action. */
static void end_turn(struct vnc_lease *l, const char *note, bool left, int64_t wall)
{
	struct vnc_lease_answer a = {.answered = true, .left = left,
				     .taken_wall = l->since_wall, .back_wall = wall};

	copy_text(a.note, sizeof(a.note), note);
	l->handback = a;
	l->handback_pending = answer_all(l, &a) == 0;
	release(l);
}

enum vnc_lease_refusal vnc_lease_hand_back(struct vnc_lease *l, const char *key,
					   const char *note, int64_t wall)
{
	if (!l->holder[0] || l->implicit || strcmp(l->holder, key) != 0)
		return VNC_LEASE_NOT_HOLDER;
	end_turn(l, note, false, wall);
	return VNC_LEASE_OK;
}

bool vnc_lease_may_input(struct vnc_lease *l, const char *key, bool implicit, uint64_t now,
			 int64_t wall)
{
	if (l->agent_busy)
		return false;
	if (l->holder[0] && strcmp(l->holder, key) == 0) {
		l->last_input = now;
		return true;
	}
	if (!implicit)
		return false; /* a page's viewer watches until it takes control */
	if (l->holder[0] && !l->gone_at)
		return false;
	if (l->holder[0])
		end_turn(l, "", true, wall); /* its holder's page is gone */
	snprintf(l->holder, sizeof(l->holder), "%s", key);
	l->implicit = true;
	l->since_wall = wall;
	l->last_input = now;
	l->gone_at = 0;
	l->version++;
	return true;
}

enum vnc_lease_refusal vnc_lease_agent_begin(struct vnc_lease *l, int64_t *since_wall)
{
	if (l->holder[0]) {
		*since_wall = l->since_wall;
		return VNC_LEASE_HELD;
	}
	if (l->agent_busy++ == 0)
		l->version++;
	return VNC_LEASE_OK;
}

void vnc_lease_agent_end(struct vnc_lease *l)
{
	if (l->agent_busy > 0 && --l->agent_busy == 0)
		l->version++;
}

bool vnc_lease_take_handback(struct vnc_lease *l, struct vnc_lease_answer *out)
{
	if (!l->handback_pending)
		return false;
	*out = l->handback;
	l->handback_pending = false;
	return true;
}

unsigned vnc_lease_help_add(struct vnc_lease *l, const char *reason, int64_t wall)
{
	struct help *free_slot = NULL;
	char r[VNC_LEASE_REASON_MAX];

	copy_text(r, sizeof(r), reason);
	for (int i = 0; i < VNC_LEASE_MAX_HELP; i++) {
		struct help *h = &l->help[i];

		if (!h->id) {
			if (!free_slot)
				free_slot = h;
		} else if (!h->waiting && strcmp(h->reason, r) == 0) {
			h->waiting = true; /* taken up again by a retrying agent */
			h->orphan_end = 0;
			l->version++;
			return h->id;
		}
	}
	if (!free_slot)
		return 0;
	*free_slot = (struct help){.id = ++l->next_help, .since_wall = wall, .waiting = true};
	if (free_slot->id == 0)
		free_slot->id = l->next_help = 1;
	memcpy(free_slot->reason, r, sizeof(r));
	l->version++;
	return free_slot->id;
}

static struct help *help_find(struct vnc_lease *l, unsigned id)
{
	for (int i = 0; id && i < VNC_LEASE_MAX_HELP; i++)
		if (l->help[i].id == id)
			return &l->help[i];
	return NULL;
}

void vnc_lease_help_leave(struct vnc_lease *l, unsigned id, uint64_t now)
{
	struct help *h = help_find(l, id);

	if (!h)
		return;
	if (h->answer.answered) {
		h->id = 0; /* nobody left to tell */
	} else {
		h->waiting = false;
		h->orphan_end = now + VNC_LEASE_ORPHAN_MS;
	}
	l->version++;
}

bool vnc_lease_help_result(struct vnc_lease *l, unsigned id, struct vnc_lease_answer *out)
{
	struct help *h = help_find(l, id);

	if (!h || !h->answer.answered)
		return false;
	*out = h->answer;
	h->id = 0;
	l->version++;
	return true;
}

static uint64_t next_due(const struct vnc_lease *l)
{
	uint64_t next = UINT64_MAX;

	if (l->holder[0] && l->implicit)
		next = l->last_input + VNC_LEASE_IMPLICIT_MS;
	if (l->holder[0] && l->gone_at && l->gone_at + VNC_LEASE_GRACE_MS < next)
		next = l->gone_at + VNC_LEASE_GRACE_MS;
	for (int i = 0; i < VNC_LEASE_MAX_HELP; i++)
		if (l->help[i].id && !l->help[i].waiting && l->help[i].orphan_end < next)
			next = l->help[i].orphan_end;
	return next;
}

int vnc_lease_timeout_ms(const struct vnc_lease *l, uint64_t now)
{
	uint64_t next = next_due(l);

	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now > 3600000 ? 3600000 : next - now);
}

void vnc_lease_tick(struct vnc_lease *l, uint64_t now, int64_t wall)
{
	if (l->holder[0] && l->implicit && now >= l->last_input + VNC_LEASE_IMPLICIT_MS)
		release(l);
	if (l->holder[0] && l->gone_at && now >= l->gone_at + VNC_LEASE_GRACE_MS)
		end_turn(l, "", true, wall);
	for (int i = 0; i < VNC_LEASE_MAX_HELP; i++) {
		struct help *h = &l->help[i];

		if (h->id && !h->waiting && now >= h->orphan_end) {
			h->id = 0;
			l->version++;
		}
	}
}

json_t *vnc_lease_state_json(const struct vnc_lease *l, const char *key)
{
	json_t *o = json_object(), *help = json_array(), *holder = json_null();
	char since[32];
	int viewers = 0;

	if (!o || !help) {
		json_decref(o);
		json_decref(help);
		return NULL;
	}
	if (l->holder[0]) {
		util_rfc3339_s(l->since_wall, since, sizeof(since));
		holder = json_pack("{s:s, s:b, s:b, s:b}", "since", since, "you",
				   key && strcmp(key, l->holder) == 0, "implicit", l->implicit,
				   "away", l->gone_at != 0);
	}
	for (int i = 0; i < VNC_LEASE_MAX_HELP; i++) {
		const struct help *h = &l->help[i];

		if (!h->id || h->answer.answered)
			continue;
		util_rfc3339_s(h->since_wall, since, sizeof(since));
		json_array_append_new(help, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)h->id,
						      "reason", h->reason, "since", since));
	}
	for (int i = 0; i < l->nviewers; i++)
		viewers += l->viewers[i].conns;
	json_object_set_new(o, "version", json_integer(l->version));
	json_object_set_new(o, "control", json_string(l->holder[0] ? "person" : "agent"));
	json_object_set_new(o, "holder", holder ? holder : json_null());
	json_object_set_new(o, "agent_busy", json_boolean(l->agent_busy > 0));
	json_object_set_new(o, "help", help);
	json_object_set_new(o, "viewers", json_integer(viewers));
	return o;
}
