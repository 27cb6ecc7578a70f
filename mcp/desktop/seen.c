/* The per-client table of last images; see seen.h.  A linear scan: 64
 * entries compared under a mutex cost nothing next to a screenshot. */
#include "seen.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char client[129]; /* a session id is at most 128 bytes; longer ones are cut */
	uint64_t hash;
	int64_t at_ms;
	uint64_t used;     /* tick of the last put or lookup; 0: free */
};

struct desk_seen {
	pthread_mutex_t mu;
	uint64_t tick;
	unsigned n;
	struct entry e[];
};

struct desk_seen *desk_seen_new(unsigned max)
{
	struct desk_seen *t;

	if (max == 0)
		max = 64;
	t = calloc(1, sizeof(*t) + max * sizeof(t->e[0]));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	t->n = max;
	return t;
}

void desk_seen_free(struct desk_seen *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* The entry of client, or NULL.  Locked. */
static struct entry *find(struct desk_seen *t, const char *client)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->e[i].used && strncmp(t->e[i].client, client, sizeof(t->e[i].client) - 1) == 0)
			return &t->e[i];
	return NULL;
}

void desk_seen_put(struct desk_seen *t, const char *client, uint64_t hash, int64_t at_ms)
{
	struct entry *x;

	pthread_mutex_lock(&t->mu);
	x = find(t, client);
	if (!x) {
		/* A free entry, else the least recently used. */
		x = &t->e[0];
		for (unsigned i = 1; i < t->n && x->used; i++)
			if (t->e[i].used < x->used)
				x = &t->e[i];
		snprintf(x->client, sizeof(x->client), "%s", client);
	}
	x->hash = hash;
	x->at_ms = at_ms;
	x->used = ++t->tick;
	pthread_mutex_unlock(&t->mu);
}

bool desk_seen_same(struct desk_seen *t, const char *client, uint64_t hash, int64_t *at_ms)
{
	struct entry *x;
	bool same = false;

	pthread_mutex_lock(&t->mu);
	x = find(t, client);
	if (x) {
		x->used = ++t->tick;
		same = x->hash == hash;
		*at_ms = x->at_ms;
	}
	pthread_mutex_unlock(&t->mu);
	return same;
}
