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

static json_t *answer_save(const struct vnc_lease_answer *a)
{
	if (!a->answered)
		return json_null();
	return json_pack("{s:b, s:s, s:I, s:I}", "left", a->left, "note", a->note, "taken",
			 (json_int_t)a->taken_wall, "back", (json_int_t)a->back_wall);
}

json_t *vnc_lease_save_json(const struct vnc_lease *l)
{
	json_t *help = json_array(), *o;

	for (int i = 0; help && i < VNC_LEASE_MAX_HELP; i++) {
		const struct help *h = &l->help[i];

		if (h->id)
			json_array_append_new(help, json_pack("{s:I, s:s, s:I, s:o}", "id",
							      (json_int_t)h->id, "reason", h->reason,
							      "since", (json_int_t)h->since_wall,
							      "answer", answer_save(&h->answer)));
	}
	o = json_pack("{s:i, s:o, s:I, s:o, s:o}", "v", 1, "holder",
		      l->holder[0] && !l->implicit
			      ? json_pack("{s:s, s:I}", "key", l->holder, "since",
					  (json_int_t)l->since_wall)
			      : json_null(),
		      "next_help", (json_int_t)l->next_help, "help", help ? help : json_null(),
		      "handback",
		      l->handback_pending ? answer_save(&l->handback) : json_null());
	return o;
}

/* An answer as answer_save() wrote it (null: none yet); false when it is
 * something else. */
static bool answer_load(const json_t *j, struct vnc_lease_answer *a)
{
	json_t *left, *note, *taken, *back;

	memset(a, 0, sizeof(*a));
	if (json_is_null(j))
		return true;
	left = json_object_get(j, "left");
	note = json_object_get(j, "note");
	taken = json_object_get(j, "taken");
	back = json_object_get(j, "back");
	if (!json_is_boolean(left) || !json_is_string(note) || !json_is_integer(taken) ||
	    !json_is_integer(back))
		return false;
	a->answered = true;
	a->left = json_is_true(left);
	copy_text(a->note, sizeof(a->note), json_string_value(note));
	a->taken_wall = json_integer_value(taken);
	a->back_wall = json_integer_value(back);
	return true;
}

int vnc_lease_restore(struct vnc_lease *l, const json_t *j, uint64_t now)
{
	AUTOFREE struct vnc_lease *n = calloc(1, sizeof(*n));
	json_t *holder = json_object_get(j, "holder");
	json_t *help = json_object_get(j, "help"), *next = json_object_get(j, "next_help");
	json_t *h, *key, *since;
	size_t i;

	if (!n)
		return -1;
	if (json_integer_value(json_object_get(j, "v")) != 1 || !json_is_array(help) ||
	    json_array_size(help) > VNC_LEASE_MAX_HELP || !json_is_integer(next) ||
	    json_integer_value(next) < 0 || json_integer_value(next) > UINT32_MAX)
		return -1;
	if (!json_is_null(holder)) {
		key = json_object_get(holder, "key");
		since = json_object_get(holder, "since");
		if (!json_is_string(key) || json_string_length(key) == 0 ||
		    json_string_length(key) >= sizeof(n->holder) || !json_is_integer(since))
			return -1;
		snprintf(n->holder, sizeof(n->holder), "%s", json_string_value(key));
		n->since_wall = json_integer_value(since);
		n->gone_at = now ? now : 1; /* its page reconnects, or the grace ends */
	}
	n->next_help = (unsigned)json_integer_value(next);
	json_array_foreach(help, i, h) {
		json_t *id = json_object_get(h, "id"), *reason = json_object_get(h, "reason");
		struct help *slot = &n->help[i];

		if (!json_is_integer(id) || json_integer_value(id) < 1 ||
		    json_integer_value(id) > UINT32_MAX || !json_is_string(reason) ||
		    !json_is_integer(json_object_get(h, "since")) ||
		    !answer_load(json_object_get(h, "answer"), &slot->answer))
			return -1;
		slot->id = (unsigned)json_integer_value(id);
		copy_text(slot->reason, sizeof(slot->reason), json_string_value(reason));
		slot->since_wall = json_integer_value(json_object_get(h, "since"));
		slot->orphan_end = now + VNC_LEASE_ORPHAN_MS; /* its caller was cut off */
	}
	if (!answer_load(json_object_get(j, "handback"), &n->handback))
		return -1;
	n->handback_pending = n->handback.answered;
	n->version = l->version + 1;
	*l = *n;
	return 0;
}
