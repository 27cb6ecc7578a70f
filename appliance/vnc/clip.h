/* Clipboard exchange between the viewers and the X display: text a viewer
 * sends (ClientCutText, or the extended clipboard's UTF-8) becomes the X
 * CLIPBOARD and PRIMARY, owned by cloche-vnc; text another X client copies
 * goes to every viewer (ServerCutText: UTF-8 to viewers of the extended
 * clipboard, Latin-1 to the others).  The X side is the shared selection
 * module (appliance/x11/x11_clip.h), on a connection and thread of its
 * own, so the event loop never waits for another program's answer.
 *
 * CLOCHE_CLIPBOARD=off (see x11_clip_env_enabled) turns all of it off:
 * cut text is then ignored both ways. */
#ifndef CLOCHE_VNC_CLIP_H
#define CLOCHE_VNC_CLIP_H

#include "common/err.h"

#include <rfb/rfb.h>

struct vnc_clip;

/* Connects to display name (NULL: $DISPLAY), watches its clipboard and
 * installs the cut-text hooks on screen (which must outlive the handle),
 * unless the environment turns the clipboard off: then the handle does
 * nothing.  Only one handle may exist at a time (libvncserver's hooks
 * carry no pointer of ours).  Returns it, or NULL with e set. */
struct vnc_clip *vnc_clip_new(const char *name, rfbScreenInfoPtr screen, struct err *e);

/* A descriptor that turns readable when an X client copied something new,
 * or -1 when the clipboard is off. */
int vnc_clip_fd(const struct vnc_clip *c);

/* Sends the text another X client copied, if any came, to every viewer.
 * Never blocks. */
void vnc_clip_run(struct vnc_clip *c);

/* Closes the X side; the hooks left on the screen then do nothing, so the
 * screen may be freed before or after.  NULL is fine. */
void vnc_clip_free(struct vnc_clip *c);

#endif
