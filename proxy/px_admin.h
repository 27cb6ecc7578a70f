/* The operator's endpoints on the admin listener: health, metrics, and
 * per-sandbox counters, drains and resumes (the list is in px_admin.c). */
#ifndef PX_ADMIN_H
#define PX_ADMIN_H
#include "proxy/px_head.h"
#include "proxy/px_proxy.h"

#include "common/buf.h"

/* Answers a parsed admin request into out: a whole response, which
 * closes the connection.  Pokes every worker after a drain or resume.
 * Never blocks. */
void px_admin_answer(struct px_proxy *p, const struct px_head *h, struct buf *out);

#endif
