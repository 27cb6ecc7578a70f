/* The web port: noVNC's static files and its WebSocket on one listener.
 *
 * libvncserver's own httpd serves one connection at a time, knows few
 * content types and cannot pass a WebSocket upgrade to the RFB side, so
 * this small HTTP/1.1 server replaces it.  Each request is read with
 * MSG_PEEK first; a WebSocket upgrade is handed over with its bytes still
 * unread, so libvncserver sees the handshake exactly as if the client had
 * connected to the RFB port.  Everything else is consumed and answered:
 *
 *   GET /            302 to vnc.html?autoconnect=1&resize=scale&reconnect=1;
 *                    with ?secret=S, also path=websockify?secret=S and
 *                    password=S, so that one link opens the desktop
 *   GET /<file>      the file under the web directory (GET and HEAD only);
 *                    .html pages get cloche's script: noVNC's defaults,
 *                    the page's viewer key, and the control bar
 *   GET|POST /cloche/control   the control lease (docs/vnc.md, Control):
 *                    its state (long-polled with ?since=), take, hand back
 *
 * A WebSocket upgrade is handed over only when its Host and Origin (when
 * present) are allowed (common/hostcheck.h: a web page elsewhere must not
 * watch or drive the desktop through a visitor's browser), and, when the
 * sandbox has a secret, when the request target carries it as ?secret=
 * (401 without, 403 when wrong).
 *
 * What each request head gets (400, 404, 405, 431, which are WebSockets)
 * is request.c's, over common/http1_head; this file does the sockets, the
 * files and the lease.  Requests are bounded (8 KiB of headers, no bodies),
 * connections are non-blocking and time out, files go out with
 * sendfile(). */
#ifndef CLOCHE_VNC_HTTP_H
#define CLOCHE_VNC_HTTP_H

#include "lease.h"
#include "request.h"

#include "common/err.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vnc_http;

/* Receives a connection whose next request is a WebSocket upgrade; fd is
 * the callee's from then on.  key is the viewer key of the page that opened
 * it (?viewer=, token characters only), or NULL. */
typedef void (*vnc_http_upgrade_fn)(void *ctx, int fd, const char *peer, const char *key);

/* Serves web_dir on the listening socket listen_fd (ownership passes to the
 * server).  Returns the handle or NULL with e set (listen_fd is then
 * closed). */
struct vnc_http *vnc_http_new(int listen_fd, const char *web_dir,
			      const struct vnc_http_guard *guard, vnc_http_upgrade_fn upgrade,
			      void *ctx, struct err *e);

/* Fills up to cap pollfd entries for the listener and the connections and
 * returns how many; vnc_http_process() must get the same array back. */
size_t vnc_http_pollfds(struct vnc_http *h, struct pollfd *fds, size_t cap, uint64_t now_ms);

/* Milliseconds until a connection times out or a partial request should be
 * looked at again; -1 when there is nothing to wait for. */
int vnc_http_timeout_ms(const struct vnc_http *h, uint64_t now_ms);

/* Handles the poll results for the entries vnc_http_pollfds() filled, plus
 * any timers that are due. */
void vnc_http_process(struct vnc_http *h, const struct pollfd *fds, size_t n, uint64_t now_ms);

/* Serves /cloche/control over this lease (NULL: answers 404). */
void vnc_http_set_lease(struct vnc_http *h, struct vnc_lease *lease);

/* Replaces the sandbox's secret with secret (checked by
 * vnc_request_rekey already): the guard's strings, the VNC passwords.
 * 0, or -1 with e set. */
typedef int (*vnc_http_rekey_fn)(void *ctx, const char *secret, struct err *e);

/* Serves POST /cloche/rekey through fn (without one: 404). */
void vnc_http_set_rekey(struct vnc_http *h, vnc_http_rekey_fn fn, void *ctx);

/* The lease changed: answers the control long-polls waiting for that. */
void vnc_http_lease_changed(struct vnc_http *h, uint64_t now_ms);

/* Closes the listener and every connection. */
void vnc_http_free(struct vnc_http *h);

#endif
