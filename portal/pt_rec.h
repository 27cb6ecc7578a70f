/* Recordings of a sandbox's screen and its action trace, portal side
 * (docs/recording.md):
 *
 *   POST /sbv1/sandboxes/{id}/recordings               start one
 *   GET  /sbv1/sandboxes/{id}/recordings               list them
 *   POST /sbv1/sandboxes/{id}/recordings/{rec}/stop    stop it
 *   GET  /sbv1/sandboxes/{id}/recordings/{rec}         the MP4
 *   GET  /sbv1/sandboxes/{id}/trace                    the action trace (JSON lines)
 *
 * Each is one call to the sandbox's node on its own thread; the answer is
 * passed on as the node gave it (bytes with their Content-Length for the
 * MP4 and the trace).  Starts and stops are events of the sandbox. */
#ifndef CLOCHE_PT_REC_H
#define CLOCHE_PT_REC_H

#include "portal/pt_portal.h"

/* What a request asks of a sandbox's recordings (one route each). */
enum pt_rec_op {
	PT_REC_LIST,  /* GET .../recordings */
	PT_REC_START, /* POST .../recordings */
	PT_REC_GET,   /* GET .../recordings/{rec} */
	PT_REC_STOP,  /* POST .../recordings/{rec}/stop */
	PT_REC_TRACE, /* GET .../trace */
};

/* Serves op on sandbox sb (visible to the caller) for req; rec is the
 * recording of PT_REC_GET and PT_REC_STOP (404 unless it is a recording
 * id, common/recid.h), NULL otherwise. */
void pt_rec_handle(struct pt_portal *p, const struct pt_sb *sb, enum pt_rec_op op,
		   const char *rec, const struct hsrv_req *req, struct hsrv_resp *resp);

/* Starts a recording of sb for an acquire that asked for one (no answer
 * goes anywhere; the outcome is an event of the sandbox). */
void pt_rec_start_quiet(struct pt_portal *p, const struct pt_sb *sb);

#endif
