/* What each client last saw: the hash of the last whole-screen image each
 * MCP session was sent, and when, so a screenshot asked `if_changed` can
 * answer "unchanged" in a line of text instead of an image.
 *
 * A table of at most max clients (the MCP library keeps at most 64
 * sessions); when full, the client not heard from longest is forgotten
 * (its next if_changed screenshot is then an image: the safe answer).
 * Safe to use from several threads. */
#ifndef CLOCHE_DESK_SEEN_H
#define CLOCHE_DESK_SEEN_H

#include <stdbool.h>
#include <stdint.h>

struct desk_seen;

/* A table for max clients (0 means 64).  NULL when out of memory. */
struct desk_seen *desk_seen_new(unsigned max);
void desk_seen_free(struct desk_seen *t);

/* Client (a session id, of which 128 bytes count; "" for one anonymous
 * client) was sent an image of hash at wall time at_ms. */
void desk_seen_put(struct desk_seen *t, const char *client, uint64_t hash, int64_t at_ms);

/* True when client's last image had hash, with *at_ms when it was sent. */
bool desk_seen_same(struct desk_seen *t, const char *client, uint64_t hash, int64_t *at_ms);

#endif
