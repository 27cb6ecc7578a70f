/* The RFB side: libvncserver's screen, its client hooks, VNC password,
 * and the bridge from libvncserver's callbacks to the input module.
 *
 * libvncserver does not listen on any port here (screen->port is 0): the
 * listeners are ours (net.c, http.c) and hand accepted sockets over with
 * vnc_server_adopt(), which is how one port can serve both the noVNC files
 * and its WebSocket. */
#ifndef CLOCHE_VNC_SERVER_H
#define CLOCHE_VNC_SERVER_H

#include "input.h"
#include "lease.h"
#include "marker.h"
#include "options.h"

#include "common/err.h"

#include <poll.h>
#include <rfb/rfb.h>
#include <stdbool.h>
#include <stddef.h>

struct vnc_server;

/* Called whenever the number of connected viewers changes. */
typedef void (*vnc_server_clients_fn)(void *ctx, int clients);

/* Creates the screen for a width x height 32-bit framebuffer fb (owned by
 * the caller, must outlive the server), reading the password file if one
 * is configured.  in may be NULL when input is disabled.  Returns the
 * handle or NULL with e set. */
struct vnc_server *vnc_server_new(const struct vnc_options *o, int width, int height, char *fb,
				  struct vnc_input *in, vnc_server_clients_fn on_clients,
				  void *ctx, struct err *e);

/* Desktop size requests (resize.c).  request answers a viewer's
 * SetDesktopSize of w x h with nscreens screens with an ExtendedDesktopSize
 * status (0 = done); gone hears of every viewer that leaves. */
struct vnc_server_resize {
	int (*request)(void *ctx, rfbClientPtr cl, int w, int h, int nscreens);
	void (*gone)(void *ctx, rfbClientPtr cl);
	void *ctx;
};

/* Installs the size hooks (copied).  Without them every SetDesktopSize is
 * refused as prohibited, libvncserver's default. */
void vnc_server_on_resize(struct vnc_server *s, const struct vnc_server_resize *r);

/* The libvncserver screen (for capture and cursor). */
rfbScreenInfoPtr vnc_server_screen(struct vnc_server *s);

/* The click markers shown to viewers, owned by the server. */
struct vnc_marker *vnc_server_marker(struct vnc_server *s);

/* Hands an accepted socket to libvncserver, which takes ownership: it
 * detects a WebSocket handshake on its own and otherwise speaks RFB.
 * peer is the client's address for the logs.  via_web says the socket
 * comes from the web port, whose handshake was checked (Host, Origin,
 * secret); a WebSocket on any other socket is refused, since nobody
 * checked it.  key is the viewer key its page sent (NULL for none). */
void vnc_server_adopt(struct vnc_server *s, int fd, const char *peer, bool via_web,
		      const char *key);

/* Puts viewers' input under the control lease (docs/vnc.md, Control): a
 * viewer adopted with a key (its noVNC page's) watches until it takes
 * control; one without (a plain VNC client) takes a free lease by typing.
 * Without a lease everyone with rights drives the desktop at once. */
void vnc_server_set_lease(struct vnc_server *s, struct vnc_lease *lease);

/* Whether this viewer's input may reach X now (its rights and the lease);
 * may take a free lease for a plain VNC client. */
bool vnc_server_may_input(rfbClientPtr cl);

/* Appends a POLLIN entry for every socket libvncserver watches to fds
 * (capacity cap).  Returns the number appended. */
size_t vnc_server_pollfds(struct vnc_server *s, struct pollfd *fds, size_t cap);

/* Reads whatever the viewers sent and sends pending updates; never blocks
 * waiting for input. */
void vnc_server_process(struct vnc_server *s);

/* Number of viewers connected now. */
int vnc_server_clients(const struct vnc_server *s);

/* Disconnects every viewer and frees the screen. */
/* The sandbox's secret changed to secret, whose view secret is view: when
 * the VNC passwords are the secret and its view secret (not a
 * --password-file), they become these.  Viewers already connected stay.
 * 0, or -1 with e set (nothing changed). */
int vnc_server_set_secret(struct vnc_server *s, const char *secret, const char *view,
			  struct err *e);

void vnc_server_free(struct vnc_server *s);

#endif
