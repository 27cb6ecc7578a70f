/* The action trace (trace.h).  Each line is written with one write(2) on an
 * O_APPEND descriptor, so the three MCP servers of a sandbox can share the
 * file without locks; a rotation race between two of them can at worst
 * drop one generation early, never mix lines. */
#include "mcp/lib/trace.h"

#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A copy of v with every string longer than MCP_TRACE_STR characters cut
 * (and its length noted). */
static json_t *cut(const json_t *v)
{
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		char buf[MCP_TRACE_STR + 64];
		size_t keep = MCP_TRACE_STR;

		if (n <= MCP_TRACE_STR)
			return json_deep_copy(v);
		/* Never cut inside a UTF-8 sequence. */
		while (keep > 0 && (json_string_value(v)[keep] & 0xc0) == 0x80)
			keep--;
		snprintf(buf, sizeof(buf), "%.*s... (%zu bytes)", (int)keep, json_string_value(v), n);
		return json_string(buf);
	}
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *x;

		json_object_foreach((json_t *)v, k, x)
			json_object_set_new(o, k, cut(x));
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *x;

		json_array_foreach(v, i, x)
			json_array_append_new(a, cut(x));
		return a;
	}
	return json_deep_copy(v);
}

static void sha256_16(const char *data, size_t n, char out[17])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (!EVP_Digest(data, n, md, &len, EVP_sha256(), NULL) || len < 8) {
		snprintf(out, 17, "unknown");
		return;
	}
	util_hex(md, 8, hex);
	snprintf(out, 17, "%.16s", hex);
}

/* What the result says in one short line, and the hashes of its images. */
static void summarize(const json_t *result, json_t *line)
{
	json_t *content = json_object_get(result, "content"), *item, *images = NULL;
	char summary[MCP_TRACE_SUMMARY + 8] = "";
	size_t i;

	json_array_foreach(content, i, item) {
		const char *type = json_string_value(json_object_get(item, "type"));
		const char *text = json_string_value(json_object_get(item, "text"));
		const char *data = json_string_value(json_object_get(item, "data"));

		if (type && strcmp(type, "text") == 0 && text && !summary[0]) {
			size_t n = strlen(text), keep = n > MCP_TRACE_SUMMARY ? MCP_TRACE_SUMMARY : n;

			while (keep < n && keep > 0 && (text[keep] & 0xc0) == 0x80)
				keep--;
			snprintf(summary, sizeof(summary), "%.*s%s", (int)keep, text, keep < n ? "..." : "");
			for (char *p = summary; *p; p++)
				if (*p == '\n' || *p == '\r' || *p == '\t')
					*p = ' ';
		} else if (type && strcmp(type, "image") == 0 && data) {
			char h[17];

			sha256_16(data, strlen(data), h);
			if (!images)
				images = json_array();
			json_array_append_new(images, json_pack("{s:s, s:s?, s:I}", "sha256_16", h,
								"mimeType", json_string_value(json_object_get(item, "mimeType")),
								"base64_bytes", (json_int_t)strlen(data)));
		}
	}
	json_object_set_new(line, "summary", json_string(summary));
	if (images)
		json_object_set_new(line, "images", images);
}

json_t *mcp_trace_line(const char *server, const char *tool, const json_t *args,
		       const char *status, const json_t *result, uint64_t start_ms,
		       uint64_t dur_ms, const json_t *recording)
{
	char ts[80];
	time_t sec = (time_t)(start_ms / 1000);
	struct tm tm;
	json_t *line;

	gmtime_r(&sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(start_ms % 1000));
	line = json_pack("{s:s, s:I, s:s, s:s, s:o, s:I, s:s, s:b}", "ts", ts, "ts_ms",
			 (json_int_t)start_ms, "server", server, "tool", tool, "arguments",
			 args ? cut(args) : json_object(), "duration_ms", (json_int_t)dur_ms, "status",
			 status, "isError", json_is_true(json_object_get(result, "isError")));
	if (!line)
		return NULL;
	if (result)
		summarize(result, line);
	if (json_is_object(recording)) {
		const char *id = json_string_value(json_object_get(recording, "id"));
		json_int_t started = json_integer_value(json_object_get(recording, "started_ms"));

		if (id && started > 0)
			json_object_set_new(line, "recording",
					    json_pack("{s:s, s:I}", "id", id, "offset_ms",
						      (json_int_t)start_ms > started
							      ? (json_int_t)start_ms - started
							      : 0));
	}
	return line;
}

/* The trace is shared by servers of two users (the agent's and
 * mcp-desktop's, which is in the agent's group; docs/security.md): whoever
 * creates the file opens it to the group. */
static int trace_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0664);
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & S_IWGRP))
		(void)fchmod(fd, (st.st_mode & 07777) | S_IWGRP);
	return fd;
}

void mcp_trace_append(const char *server, const char *tool, const json_t *args,
		      const char *status, const json_t *result, uint64_t start_ms, uint64_t dur_ms)
{
	const char *path = getenv("CLOCHE_TRACE_FILE");
	const char *cur = getenv("CLOCHE_REC_CURRENT");
	struct err e = ERR_INIT;
	AUTOJSON json_t *rec = NULL;
	AUTOJSON json_t *line = NULL;
	AUTOFREE char *text = NULL;
	AUTOCLOSE int fd = -1;
	struct stat st;

	if (!path || path[0] != '/')
		return;
	if (cur && cur[0] == '/' && access(cur, R_OK) == 0)
		rec = cj_load_file(cur, 4096, &e);
	line = mcp_trace_line(server, tool, args, status, result, start_ms, dur_ms, rec);
	text = line ? json_dumps(line, JSON_COMPACT) : NULL;
	if (!text)
		return;
	fd = trace_open(path);
	if (fd == -1)
		return;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)MCP_TRACE_MAX) {
		char old[4200];

		snprintf(old, sizeof(old), "%s.1", path);
		if (rename(path, old) == 0) {
			close(fd);
			fd = trace_open(path);
			if (fd == -1)
				return;
		}
	}
	{
		size_t n = strlen(text);
		AUTOFREE char *nl = malloc(n + 1);

		if (!nl)
			return;
		memcpy(nl, text, n);
		nl[n] = '\n';
		(void)!util_write_all(fd, nl, n + 1);
	}
}
