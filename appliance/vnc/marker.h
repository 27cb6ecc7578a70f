/* Click markers: a ring around the place of a click, shown to viewers for
 * a short while so that a person watching sees where the agent (or another
 * viewer) clicked.  The viewer that made a click itself gets no ring.
 *
 * The ring is never part of the framebuffer between updates: it is painted
 * into the frame just before libvncserver encodes an update for a viewer
 * and the pixels under it are put back right after, the way libvncserver
 * paints the cursor.  So screen capture keeps comparing against the real
 * screen, and when the ring expires a repaint of its area sends what is
 * really there. */
#ifndef CLOCHE_VNC_MARKER_H
#define CLOCHE_VNC_MARKER_H

#include "common/err.h"

#include <rfb/rfb.h>
#include <stdbool.h>
#include <stdint.h>

/* How long a ring stays, and how long a viewer's press waits to be matched
 * with the X press it causes. */
#define VNC_MARKER_MS 400
#define VNC_MARKER_EXPECT_MS 1000

struct vnc_marker;

/* Creates the markers of screen (32 bits per pixel, 0x00RRGGBB).  Returns
 * the handle or NULL (out of memory) with e set; screen must outlive it. */
struct vnc_marker *vnc_marker_new(rfbScreenInfoPtr screen, struct err *e);

/* Says that viewer cl pressed button (1-3) through us: the next X press of
 * that button within VNC_MARKER_EXPECT_MS is that viewer's own. */
void vnc_marker_expect(struct vnc_marker *m, rfbClientPtr cl, int button, uint64_t now_ms);

/* A press of button seen on the X display at x, y: shows a ring to every
 * viewer but the one that made it (see vnc_marker_expect). */
void vnc_marker_click(struct vnc_marker *m, int x, int y, int button, uint64_t now_ms);

/* Milliseconds until the next ring expires, 0 if now, -1 if none shown. */
int vnc_marker_timeout_ms(const struct vnc_marker *m, uint64_t now_ms);

/* Removes expired rings (their areas are sent again without them). */
void vnc_marker_run(struct vnc_marker *m, uint64_t now_ms);

/* Paints the rings cl should see into the framebuffer; called right before
 * an update for cl is encoded.  vnc_marker_unpaint() must follow. */
void vnc_marker_paint(struct vnc_marker *m, rfbClientPtr cl);

/* Puts back the pixels vnc_marker_paint() covered. */
void vnc_marker_unpaint(struct vnc_marker *m);

/* Forgets cl (it disconnected): its rings are shown to everyone left. */
void vnc_marker_client_gone(struct vnc_marker *m, rfbClientPtr cl);

/* Frees the handle. */
void vnc_marker_free(struct vnc_marker *m);

#endif
