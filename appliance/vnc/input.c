/* cloche-vnc's binding of the shared XTest input module; see input.h.
 * The handle is the shared module's own: struct vnc_input is never
 * defined, only converted, so there is no second copy of any state. */
#include "input.h"

#include "appliance/x11/x11_input.h"

static struct x11_input *x(struct vnc_input *in)
{
	return (struct x11_input *)in;
}

struct vnc_input *vnc_input_new(struct vnc_display *d, struct err *e)
{
	return (struct vnc_input *)x11_input_new(d->dpy, d->screen, X11_SPARE_HIGH, e);
}

void vnc_input_pointer(struct vnc_input *in, int mask, int x_, int y)
{
	x11_input_pointer(x(in), mask, x_, y);
}

void vnc_input_key(struct vnc_input *in, bool down, uint32_t ks)
{
	x11_input_key(x(in), down, ks);
}

void vnc_input_release_all(struct vnc_input *in)
{
	x11_input_release_all(x(in));
}

void vnc_input_set_size(struct vnc_input *in, int width, int height)
{
	x11_input_set_size(x(in), width, height);
}

int vnc_input_timeout_ms(const struct vnc_input *in, uint64_t now_ms)
{
	return x11_input_timeout_ms((const struct x11_input *)in, now_ms);
}

void vnc_input_run(struct vnc_input *in, uint64_t now_ms)
{
	x11_input_run(x(in), now_ms);
}

bool vnc_input_handle_event(struct vnc_input *in, XEvent *ev)
{
	return x11_input_handle_event(x(in), ev);
}

void vnc_input_free(struct vnc_input *in)
{
	x11_input_free(x(in));
}
