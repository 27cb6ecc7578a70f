/* Desktop size rules; see size.h. */
#include "size.h"

#include <strings.h>

/* Reads 1-5 digits at *p into *v (1-65535) and advances *p. */
static int read_side(const char **p, int *v)
{
	long n = 0;
	int digits = 0;

	while (**p >= '0' && **p <= '9' && digits < 6) {
		n = n * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	if (digits == 0 || digits > 5 || n < 1 || n > 65535)
		return -1;
	*v = (int)n;
	return 0;
}

int vnc_size_parse(const char *s, int *w, int *h)
{
	int a, b;

	if (!s || read_side(&s, &a) == -1 || *s++ != 'x' || read_side(&s, &b) == -1 || *s)
		return -1;
	*w = a;
	*h = b;
	return 0;
}

int vnc_switch_parse(const char *s, bool *on)
{
	static const char *const yes[] = {"on", "true", "yes", "1"};
	static const char *const no[] = {"off", "false", "no", "0"};

	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*on = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*on = false;
			return 0;
		}
	}
	return -1;
}

struct vnc_size_limits vnc_size_limits_for(int max_w, int max_h)
{
	struct vnc_size_limits l = {VNC_SIZE_MIN_W, VNC_SIZE_MIN_H, VNC_SIZE_MAX_W,
				    VNC_SIZE_MAX_H};

	if (max_w < l.max_w)
		l.max_w = max_w;
	if (max_h < l.max_h)
		l.max_h = max_h;
	return l;
}

enum vnc_size_status vnc_size_verdict(bool enabled, bool view_only, int nscreens, int w, int h,
				      const struct vnc_size_limits *l)
{
	if (!enabled || view_only)
		return VNC_SIZE_PROHIBITED;
	if (nscreens != 1 || w < l->min_w || h < l->min_h || w > l->max_w || h > l->max_h)
		return VNC_SIZE_INVALID;
	return VNC_SIZE_OK;
}

const char *vnc_size_status_name(enum vnc_size_status st)
{
	switch (st) {
	case VNC_SIZE_OK:
		return "ok";
	case VNC_SIZE_PROHIBITED:
		return "prohibited";
	case VNC_SIZE_NO_RESOURCES:
		return "out of resources";
	case VNC_SIZE_INVALID:
		return "invalid";
	}
	return "unknown";
}
