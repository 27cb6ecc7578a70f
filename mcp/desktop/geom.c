/* Model and real pixel spaces; see geom.h. */
#include "geom.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static const struct {
	const char *name;
	int w, h;
} presets[] = {
	/* The reference demo's order: the first of the display's aspect wins. */
	{"xga", 1024, 768},
	{"wxga", 1280, 800},
	{"fwxga", 1366, 768},
};

#define ASPECT_SLACK 0.02

void desk_size_auto(int real_w, int real_h, int *w, int *h)
{
	double ratio = (double)real_w / real_h;

	*w = *h = 0;
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		double r = (double)presets[i].w / presets[i].h;

		if (r - ratio < ASPECT_SLACK && ratio - r < ASPECT_SLACK) {
			if (presets[i].w < real_w) {
				*w = presets[i].w;
				*h = presets[i].h;
			}
			return;
		}
	}
}

int desk_size_parse(const char *s, int real_w, int real_h, int *w, int *h, struct err *e)
{
	char tail;

	*w = *h = 0;
	if (!s || !*s || strcasecmp(s, "native") == 0)
		return 0;
	if (strcasecmp(s, "auto") == 0) {
		if (real_w > 0 && real_h > 0)
			desk_size_auto(real_w, real_h, w, h);
		return 0;
	}
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcasecmp(s, presets[i].name) == 0) {
			*w = presets[i].w;
			*h = presets[i].h;
			return 0;
		}
	if (sscanf(s, "%dx%d%c", w, h, &tail) != 2 || *w < 16 || *h < 16 || *w > 8192 ||
	    *h > 8192) {
		*w = *h = 0;
		return err_set(e, 0,
			       "screen-size `%.40s`: want WxH (16-8192 a side), xga (1024x768), "
			       "wxga (1280x800), fwxga (1366x768), auto or native",
			       s);
	}
	return 0;
}

int desk_to_real(int v, int model, int real)
{
	if (model == real)
		return v;
	v = (int)(((double)v + 0.5) * real / model);
	return v >= real ? real - 1 : v;
}

int desk_to_model(int v, int model, int real)
{
	if (model == real)
		return v;
	v = (int)(((double)v + 0.5) * model / real);
	return v >= model ? model - 1 : v;
}
