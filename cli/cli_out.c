/* The CLI's output helpers; see cli_out.h. */
#include "cli/cli_out.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cli_reltime(const char *iso, long long now_ms, char *out, size_t len)
{
	struct tm tm;
	long long t, d;
	const char *unit;
	char *rest;

	memset(&tm, 0, sizeof(tm));
	if (!iso || !(rest = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(out, len, "-");
		return;
	}
	t = (long long)timegm(&tm) * 1000;
	d = t - now_ms;
	if (d > -1000 && d < 1000) {
		snprintf(out, len, "now");
		return;
	}
	{
		long long a = d < 0 ? -d : d, v;

		if (a < 60000) {
			v = a / 1000;
			unit = "s";
		} else if (a < 3600000) {
			v = a / 60000;
			unit = "m";
		} else if (a < 86400000) {
			v = a / 3600000;
			unit = "h";
		} else {
			v = a / 86400000;
			unit = "d";
		}
		if (d > 0)
			snprintf(out, len, "in %lld%s", v, unit);
		else
			snprintf(out, len, "%lld%s ago", v, unit);
	}
}

/* One cell padded to width w, or the row's last cell and its newline. */
static int cell(struct buf *b, const char *s, size_t w, bool last)
{
	struct err e = ERR_INIT;

	if (last)
		return buf_appendf(b, &e, "%s\n", s);
	return buf_appendf(b, &e, "%-*s  ", (int)w, s);
}

int cli_table(struct buf *b, const char *const *header, size_t ncol, json_t *rows)
{
	size_t w[16] = {0}, i, c;
	json_t *row;

	if (ncol > 16)
		return -1;
	for (c = 0; c < ncol; c++)
		w[c] = strlen(header[c]);
	json_array_foreach(rows, i, row)
		for (c = 0; c < ncol; c++) {
			const char *s = json_string_value(json_array_get(row, c));
			size_t n = s ? strlen(s) : 1;

			if (n > w[c])
				w[c] = n;
		}
	for (c = 0; c < ncol; c++)
		if (cell(b, header[c], w[c], c + 1 == ncol) == -1)
			return -1;
	json_array_foreach(rows, i, row)
		for (c = 0; c < ncol; c++) {
			const char *s = json_string_value(json_array_get(row, c));

			if (cell(b, s ? s : "-", w[c], c + 1 == ncol) == -1)
				return -1;
		}
	return 0;
}

json_t *cli_mcp_config(const json_t *sb)
{
	static const char *const servers[] = {"shell", "desktop", "browser"};
	json_t *mcp = json_object_get(json_object_get(sb, "urls"), "mcp");
	const char *tok = json_string_value(json_object_get(sb, "token"));
	json_t *out, *all;
	char auth[256];

	if (!json_is_object(mcp) || !tok)
		return NULL;
	snprintf(auth, sizeof(auth), "Bearer %s", tok);
	all = json_object();
	for (size_t i = 0; i < 3; i++) {
		const char *url = json_string_value(json_object_get(mcp, servers[i]));
		char name[32];

		if (!url)
			continue;
		snprintf(name, sizeof(name), "cloche-%s", servers[i]);
		json_object_set_new(all, name,
				    json_pack("{s:s, s:s, s:{s:s}}", "type", "http", "url", url,
					      "headers", "Authorization", auth));
	}
	out = json_pack("{s:o}", "mcpServers", all);
	return out;
}

int cli_exit_code(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 0: return 7;   /* no answer */
	case 400: return 2; /* the request was wrong: a usage error */
	case 401:
	case 403: return 4;
	case 404: return 3;
	case 409: return 5;
	case 503:
	case 504: return 6;
	default: return 1;
	}
}

const char *cli_str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

int cli_fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("cloche: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_term_escape(struct buf *b, const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	struct err e = ERR_INIT;
	char hex[8];
	size_t i = 0, run = 0;

	while (i < n) {
		size_t skip = 0;

		if ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7f) {
			snprintf(hex, sizeof(hex), "\\x%02x", u[i]);
			skip = 1;
		} else if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f) {
			snprintf(hex, sizeof(hex), "\\u%04x", u[i + 1]);
			skip = 2;
		}
		if (!skip) {
			i++;
			continue;
		}
		if (buf_append(b, p + run, i - run, &e) == -1 || buf_appends(b, hex, &e) == -1)
			return -1;
		i += skip;
		run = i;
	}
	return buf_append(b, p + run, n - run, &e);
}

int cli_term_write(FILE *f, const char *p, size_t n)
{
	struct buf b = BUF_INIT(4 * n + 1);
	int rc = 0;

	if (!isatty(fileno(f)))
		return fwrite(p, 1, n, f) == n ? 0 : -1;
	if (cli_term_escape(&b, p, n) == -1) {
		errno = ENOMEM;
		rc = -1;
	} else if (b.len && fwrite(b.data, 1, b.len, f) != b.len) {
		rc = -1;
	}
	buf_free(&b);
	return rc;
}

void cli_print_json(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s) {
		cli_term_write(stdout, s, strlen(s));
		putchar('\n');
	}
	free(s);
}

void cli_print_rows(const char *const *h, size_t n, json_t *rows)
{
	struct buf b = BUF_INIT(16u << 20);

	cli_table(&b, h, n, rows);
	cli_term_write(stdout, b.data ? b.data : "", b.len);
	buf_free(&b);
}
