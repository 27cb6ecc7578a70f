/* desk-try: drives mcp-desktop's action layer without MCP, for developing
 * and checking it on a host display.  Reads one JSON arguments object per
 * line on stdin (the computer tool's: {"action":"left_click",...}) and
 * prints one JSON line per call: {"text", "failed", "error" (argument
 * errors), "png": file written, "w", "h", "ms"}.
 *
 *	desk-try [--display :N] [--screen-size WxH] [--out DIR] [--settle MS]
 */
#include "mcp/desktop/actions.h"
#include "mcp/desktop/screen.h"

#include "common/log.h"
#include "common/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *display = NULL, *out = "/tmp";
	struct desk_actions_opts o = {.settle_ms = 0, .screenshot_after = false, .png_level = 1};
	struct err e = ERR_INIT;
	struct desk_screen *s;
	struct desk_actions *a;
	char line[1 << 16];
	int n = 0;

	log_init("desk-try", LOG_WARN, 2);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--display") == 0)
			display = argv[i + 1];
		else if (strcmp(argv[i], "--out") == 0)
			out = argv[i + 1];
		else if (strcmp(argv[i], "--settle") == 0)
			o.settle_ms = atol(argv[i + 1]), o.screenshot_after = true;
		else if (strcmp(argv[i], "--screen-size") == 0 &&
			 sscanf(argv[i + 1], "%dx%d", &o.model_w, &o.model_h) == 2)
			;
		else {
			fprintf(stderr, "desk-try: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	s = desk_screen_open(display, &e);
	a = s ? desk_actions_new(s, &o, &e) : NULL;
	if (!a) {
		fprintf(stderr, "desk-try: %s\n", e.msg);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		json_error_t je;
		json_t *args = json_loads(line, 0, &je), *res;
		struct desk_reply r;
		uint64_t t0 = util_now_ms();
		char path[512] = "";
		int rc;

		if (!args)
			continue;
		err_clear(&e);
		rc = desk_actions_run_json(a, args, NULL, &r, &e);
		if (rc == 0 && r.png) {
			FILE *f;

			snprintf(path, sizeof(path), "%s/desk-%d.png", out, n++);
			f = fopen(path, "wb");
			if (f) {
				fwrite(r.png, 1, r.png_len, f);
				fclose(f);
			}
		}
		res = rc == 0 ? json_pack("{s:s, s:b, s:s, s:i, s:i, s:I, s:I}", "text", r.text,
					  "failed", r.failed, "png", path, "w", r.png_w, "h",
					  r.png_h, "bytes", (json_int_t)r.png_len, "ms",
					  (json_int_t)(util_now_ms() - t0))
			      : json_pack("{s:s}", "error", e.msg);
		json_dumpf(res, stdout, JSON_COMPACT);
		putchar('\n');
		fflush(stdout);
		json_decref(res);
		json_decref(args);
		desk_reply_free(&r);
	}
	desk_actions_free(a);
	desk_screen_close(s);
	return 0;
}
