/* The session table; see session.h.  A flat array: the table is small
 * (tens of sessions) and only the loop thread touches it, so a linear scan
 * is both the simplest and the fastest structure here. */
#include "mcp/lib/session.h"

#include "common/rnd.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mcp_sessions {
	unsigned max, n;
	uint64_t idle_ms;
	struct mcp_session *s; /* n live entries */
};

struct mcp_sessions *mcp_sessions_new(unsigned max, uint64_t idle_ms)
{
	struct mcp_sessions *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = max ? max : 64;
	t->idle_ms = idle_ms ? idle_ms : 3600ull * 1000;
	t->s = calloc(t->max, sizeof(*t->s));
	if (!t->s) {
		free(t);
		return NULL;
	}
	return t;
}

void mcp_sessions_free(struct mcp_sessions *t)
{
	if (t) {
		free(t->s);
		free(t);
	}
}

static void remove_at(struct mcp_sessions *t, unsigned i)
{
	t->s[i] = t->s[--t->n];
}

static bool expired(const struct mcp_sessions *t, const struct mcp_session *s, uint64_t now)
{
	return !s->active && now > s->last_ms && now - s->last_ms > t->idle_ms;
}

struct mcp_session *mcp_sessions_create(struct mcp_sessions *t, const char *version, uint64_t now,
					struct err *e)
{
	char id[sizeof(t->s[0].id)];
	struct mcp_session *s;

	for (unsigned i = 0; i < t->n;)
		if (expired(t, &t->s[i], now))
			remove_at(t, i);
		else
			i++;
	if (t->n == t->max) {
		unsigned victim = t->n;
		for (unsigned i = 0; i < t->n; i++)
			if (!t->s[i].active && (victim == t->n || t->s[i].last_ms < t->s[victim].last_ms))
				victim = i;
		if (victim == t->n) {
			err_http(e, 503, "all %u sessions are busy; try again later", t->max);
			return NULL;
		}
		remove_at(t, victim);
	}
	if (rnd_hex("", 16, id, sizeof(id), e) == -1) {
		err_wrap(e, "session id");
		return NULL;
	}
	s = &t->s[t->n++];
	memset(s, 0, sizeof(*s));
	memcpy(s->id, id, sizeof(id));
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->last_ms = now;
	return s;
}

struct mcp_session *mcp_sessions_get(struct mcp_sessions *t, const char *id, uint64_t now)
{
	for (unsigned i = 0; i < t->n; i++) {
		struct mcp_session *s = &t->s[i];
		if (strcmp(s->id, id) != 0)
			continue;
		if (expired(t, s, now)) {
			remove_at(t, i);
			return NULL;
		}
		s->last_ms = now;
		return s;
	}
	return NULL;
}

int mcp_sessions_end(struct mcp_sessions *t, const char *id)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->s[i].id, id) == 0) {
			remove_at(t, i);
			return 0;
		}
	return -1;
}

unsigned mcp_sessions_count(const struct mcp_sessions *t)
{
	return t->n;
}

bool mcp_session_id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n]; n++)
		if ((unsigned char)id[n] < 0x21 || (unsigned char)id[n] > 0x7e)
			return false;
	return n > 0 && n <= MCP_SESSION_ID_MAX;
}
