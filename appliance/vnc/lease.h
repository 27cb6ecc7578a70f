/* Who may drive the desktop: the control lease (docs/vnc.md, Control).
 *
 * People watch by default.  A viewer with control rights takes the lease
 * with one click in the noVNC page and hands it back with one click (and a
 * note for the agent); while a person holds it, only that person's input
 * reaches X and the agent's input tools are refused.  The agent (mcp-desktop)
 * asks before each input action; while the action runs, nobody's input goes
 * through, so keystrokes from two sources never interleave.
 *
 * Viewers are known by a key: the noVNC page cloche-vnc serves makes one
 * per browser tab and sends it with its WebSocket and its control calls.
 * A viewer without one (a plain VNC client) holds the lease implicitly
 * while it types: its input takes a free lease, which lapses after
 * VNC_LEASE_IMPLICIT_MS without input or when it leaves.
 *
 * The agent may ask for a person (request_human_help): the request shows
 * to every viewer until a person hands back, whose note answers it.
 *
 * Pure state, no I/O: the caller passes the clock in and reads the version
 * to know when to tell viewers.  Times are monotonic milliseconds (now) and
 * wall-clock milliseconds (wall, for what people and agents read). */
#ifndef CLOCHE_VNC_LEASE_H
#define CLOCHE_VNC_LEASE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VNC_LEASE_KEY_MAX 48        /* bytes of a viewer key, NUL included */
#define VNC_LEASE_NOTE_MAX 2000     /* bytes of a hand-back note */
#define VNC_LEASE_REASON_MAX 1000   /* bytes of a help request's reason */
#define VNC_LEASE_IMPLICIT_MS 10000 /* a plain VNC client's lease lapses */
#define VNC_LEASE_GRACE_MS 15000    /* a holder whose page went away */
#define VNC_LEASE_ORPHAN_MS 30000   /* a help request whose caller left */
#define VNC_LEASE_MAX_HELP 16

struct vnc_lease;

/* Why an agent's action or a person's request was refused. */
enum vnc_lease_refusal {
	VNC_LEASE_OK = 0,
	VNC_LEASE_HELD,       /* a person holds the lease */
	VNC_LEASE_NO_VIEWER,  /* no viewer with this key is connected */
	VNC_LEASE_NOT_HOLDER, /* hand back by someone who does not hold it */
	VNC_LEASE_FULL,       /* too many help requests */
};

/* What a help request was answered with. */
struct vnc_lease_answer {
	bool answered;
	bool left;                      /* the person's page closed without a hand-back */
	char note[VNC_LEASE_NOTE_MAX];
	int64_t taken_wall, back_wall;  /* when the person took and handed back */
};

struct vnc_lease *vnc_lease_new(void);
void vnc_lease_free(struct vnc_lease *l);

/* Changes whenever anything a viewer or the agent would see changes. */
unsigned vnc_lease_version(const struct vnc_lease *l);

/* A viewer connection with this key came or went (keys may repeat: one tab
 * reconnecting, or the same tab's two connections). */
void vnc_lease_viewer_join(struct vnc_lease *l, const char *key);
void vnc_lease_viewer_leave(struct vnc_lease *l, const char *key, uint64_t now);

/* A person takes the lease for the viewer key (which must be connected);
 * takes it over from another person too.  Returns VNC_LEASE_OK or
 * VNC_LEASE_NO_VIEWER. */
enum vnc_lease_refusal vnc_lease_take(struct vnc_lease *l, const char *key, int64_t wall);

/* The holder hands back, with a note for the agent (may be NULL or empty;
 * cut at VNC_LEASE_NOTE_MAX - 1 bytes on a character boundary).  Every
 * waiting help request is answered with it.  VNC_LEASE_OK or
 * VNC_LEASE_NOT_HOLDER. */
enum vnc_lease_refusal vnc_lease_hand_back(struct vnc_lease *l, const char *key,
					   const char *note, int64_t wall);

/* Whether input from a viewer may go to X now.  implicit: a viewer without
 * a page key (its input takes a free lease for a while). */
bool vnc_lease_may_input(struct vnc_lease *l, const char *key, bool implicit, uint64_t now,
			 int64_t wall);

/* The agent starts an input action: VNC_LEASE_OK and the agent is busy
 * until vnc_lease_agent_end(), or VNC_LEASE_HELD with the holder's start
 * into *since_wall. */
enum vnc_lease_refusal vnc_lease_agent_begin(struct vnc_lease *l, int64_t *since_wall);
void vnc_lease_agent_end(struct vnc_lease *l);

/* The last hand-back the agent has not been told about (once): true with
 * its note and times filled in. */
bool vnc_lease_take_handback(struct vnc_lease *l, struct vnc_lease_answer *out);

/* The agent asks for a person.  An unanswered request with the same reason
 * whose caller left less than VNC_LEASE_ORPHAN_MS ago is taken up again,
 * keeping its start.  Returns the request's id (> 0), or 0 when
 * VNC_LEASE_MAX_HELP are waiting. */
unsigned vnc_lease_help_add(struct vnc_lease *l, const char *reason, int64_t wall);

/* The caller of request id stopped waiting: the request stays shown for
 * VNC_LEASE_ORPHAN_MS (an agent retrying after a client timeout takes it
 * up again), then goes. */
void vnc_lease_help_leave(struct vnc_lease *l, unsigned id, uint64_t now);

/* The answer of request id: false while it waits.  When answered, the
 * request is gone after this call. */
bool vnc_lease_help_result(struct vnc_lease *l, unsigned id, struct vnc_lease_answer *out);

/* Milliseconds until vnc_lease_tick() has something to do; -1 for never. */
int vnc_lease_timeout_ms(const struct vnc_lease *l, uint64_t now);

/* Ends leases whose holder went away or went quiet and drops orphaned help
 * requests whose time is up. */
void vnc_lease_tick(struct vnc_lease *l, uint64_t now, int64_t wall);

/* The state as a viewer with key (NULL: an outsider such as the node) sees
 * it: {version, control: "agent"|"person", holder: {since, you, implicit} |
 * null, agent_busy, help: [{id, reason, since}], viewers}.  New reference. */
json_t *vnc_lease_state_json(const struct vnc_lease *l, const char *key);

/* What outlives a restart of cloche-vnc (its X connection killed, a
 * crash): the holder, who then has VNC_LEASE_GRACE_MS to come back as after
 * a reconnect; help requests, as if their callers had just left (an agent
 * asking again with the same reason takes its request up again, and an
 * answer given meanwhile waits for it); the hand-back the agent was not
 * told of.  A plain VNC client's implicit lease and a running agent action
 * end with the process.  New reference. */
json_t *vnc_lease_save_json(const struct vnc_lease *l);

/* Takes up what vnc_lease_save_json() wrote into a lease that has no
 * viewers yet (a new one).  Returns 0, or -1 when j is not such a state
 * (the lease is then left as it was). */
int vnc_lease_restore(struct vnc_lease *l, const json_t *j, uint64_t now);

#endif
