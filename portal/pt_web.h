/* The dashboard at `/` (pt_web.c; the files are portal/web/). */
#ifndef CLOCHE_PT_WEB_H
#define CLOCHE_PT_WEB_H
#include "portal/pt_portal.h"

/* Registers GET / and /ui/{app.css,app.js}.  0, or -1 with e. */
int pt_web_routes(struct pt_portal *p, struct err *e);

#endif
