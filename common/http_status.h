/* The one table of HTTP statuses the servers here answer with: the reason
 * phrase of a status line and the error code of a JSON error body
 * ({"error":{"code","message"}}, see hsrv_resp_error).  Clients branch on
 * the code, so a status means the same code from every server: the portal,
 * the node agent, the recorder, the proxy's admin answers.  A handler that
 * has something more precise to say (the proxy's `token_required`) passes
 * its own code instead; the table is the default.  The portal's OpenAPI
 * document lists these codes (the Error schema); a unit test keeps the two
 * in step. */
#ifndef CLOCHE_HTTP_STATUS_H
#define CLOCHE_HTTP_STATUS_H

/* The reason phrase of status (RFC 9110), e.g. "Not Found"; "Error" for a
 * status the table does not hold.  A static string. */
const char *http_status_reason(int status);

/* The error code of status, e.g. "not_found", "payload_too_large";
 * "internal" for any other 5xx and "error" for any other status.  A static
 * string. */
const char *http_status_code(int status);

#endif
