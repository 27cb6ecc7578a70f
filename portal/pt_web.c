/* The dashboard's files (portal/web/), compiled in and served at `/` and
 * `/ui/...`: plain HTML, CSS and JS that talk to the REST API.  A strict
 * Content-Security-Policy: only these files run, nothing is framed, and
 * images are the thumbnails the page fetches itself (blob: URLs). */
#include "portal/pt_web.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char pt_web_index_html[], pt_web_app_css[], pt_web_app_js[];

static const struct {
	const char *path, *type, *body;
} files[] = {
	{"/", "text/html; charset=utf-8", pt_web_index_html},
	{"/ui/app.css", "text/css; charset=utf-8", pt_web_app_css},
	{"/ui/app.js", "text/javascript; charset=utf-8", pt_web_app_js},
};

static void h_file(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (strcmp(req->path, files[i].path) != 0)
			continue;
		hsrv_resp_text(resp, 200, files[i].type, files[i].body);
		hsrv_resp_header(resp, "Content-Security-Policy",
				 "default-src 'none'; script-src 'self'; style-src 'self'; "
				 "img-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; "
				 "base-uri 'none'; form-action 'self'");
		/* Compiled in: a new portal must show its own page at once. */
		hsrv_resp_header(resp, "Cache-Control", "no-cache");
		hsrv_resp_header(resp, "X-Content-Type-Options", "nosniff");
		hsrv_resp_header(resp, "Referrer-Policy", "no-referrer");
		return;
	}
	hsrv_resp_error(resp, 404, NULL, "no such page");
}

int pt_web_routes(struct pt_portal *p, struct err *e)
{
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (hsrv_route(p->srv, "GET", files[i].path, h_file, p, e) == -1)
			return -1;
	return 0;
}
