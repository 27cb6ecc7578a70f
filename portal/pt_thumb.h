/* Thumbnails of sandbox screens for the dashboard (pt_thumb.c). */
#ifndef CLOCHE_PT_THUMB_H
#define CLOCHE_PT_THUMB_H
#include "common/http_server.h"
#include "portal/pt_portal.h"

struct pt_job;

/* GET /sbv1/sandboxes/{id}/thumbnail: answers resp with a PNG width pixels
 * wide (cached, or deferred until the node's picture arrives), or an error
 * (409 not running, 503 its node is down). */
void pt_thumb_get(struct pt_portal *p, const struct pt_sb *sb, int width,
		  const struct hsrv_req *req, struct hsrv_resp *resp);
/* A PT_JOB_THUMBNAIL came back: answers everyone waiting for it. */
void pt_thumb_job_done(struct pt_portal *p, struct pt_job *j);
/* Who drove sandbox id's desktop as of its latest thumbnail, if it is at
 * most 30 s old: {control, since?, help: [{reason, since}], seen_at}, or
 * NULL.  Thumbnails are only fetched while a dashboard shows them, so this
 * is what the dashboard sees.  New reference. */
json_t *pt_thumb_desktop(const struct pt_portal *p, const char *id);
/* At exit. */
void pt_thumb_free_all(struct pt_portal *p);

#endif
