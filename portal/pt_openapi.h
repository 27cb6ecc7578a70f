/* The OpenAPI 3.1 document of the portal's API (portal/openapi.json,
 * compiled in by the build). */
#ifndef CLOCHE_PT_OPENAPI_H
#define CLOCHE_PT_OPENAPI_H
extern const char pt_openapi_json[];
#endif
