/* The portal's HTTP API: routes, request checks, who may see what. */
#ifndef CLOCHE_PT_API_H
#define CLOCHE_PT_API_H
#include "portal/pt_portal.h"

/* Registers every route on p->srv.  0, or -1 with e set. */
int pt_api_routes(struct pt_portal *p, struct err *e);

#endif
