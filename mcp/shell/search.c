/* glob and grep: bounded searches over the file tree, in-process (no
 * fork, which is slow under gVisor).  Both stop at a result limit and at a
 * limit of entries visited, and say so, so a search of / cannot run away. */
#include "mcp/shell/shell.h"
#include "mcp/lib/cap.h"
#include "common/json.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_VISIT 200000
#define MAX_LINE_SHOWN 400
#define MAX_GREP_FILE (16u << 20)

struct walk {
	size_t visited;
	bool stopped;
};

typedef void (*walk_fn)(void *ud, const char *full, const char *rel, const struct stat *st);

/* Depth-first walk of root, calling fn for each entry below it; does not
 * follow symlinks; skips .git directories' contents. */
static void walk(struct walk *w, const char *root, const char *rel, walk_fn fn, void *ud, int depth)
{
	char dir[2 * PATH_MAX + 2];
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel);
	d = opendir(dir);
	if (!d)
		return;
	while (!w->stopped && (de = readdir(d)) != NULL) {
		char crel[PATH_MAX + 256], full[2 * PATH_MAX + 512];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->visited > MAX_VISIT) {
			w->stopped = true;
			break;
		}
		snprintf(crel, sizeof(crel), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		snprintf(full, sizeof(full), "%s/%s", root, crel);
		if (lstat(full, &st) == -1)
			continue;
		fn(ud, full, crel, &st);
		if (S_ISDIR(st.st_mode) && depth < 64 && strcmp(de->d_name, ".git") != 0 &&
		    strncmp(full, "/proc/", 6) != 0 && strncmp(full, "/sys/", 5) != 0)
			walk(w, root, crel, fn, ud, depth + 1);
	}
	closedir(d);
}

struct glob_ctx {
	char pat[PATH_MAX];
	json_t *matches;
	size_t max;
	bool truncated;
	struct walk *w;
};

static void glob_one(void *ud, const char *full, const char *rel, const struct stat *st)
{
	struct glob_ctx *g = ud;

	(void)full;
	(void)st;
	if (fnmatch(g->pat, rel, FNM_PERIOD) != 0)
		return;
	if (json_array_size(g->matches) == g->max) {
		g->truncated = true;
		g->w->stopped = true;
		return;
	}
	json_array_append_new(g->matches, json_string(rel));
}

static int glob_tool(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *pattern, *cwd_in = NULL;
	long long max;
	char cwd[PATH_MAX];
	struct glob_ctx g = {0};
	struct walk w = {0};
	struct buf text = BUF_INIT(8u << 20);
	size_t i;
	json_t *m;

	(void)call;
	if (cj_req_str(args, "pattern", &pattern, e) || cj_get_str(args, "cwd", NULL, &cwd_in, e) ||
	    cj_get_int(args, "max_results", 1000, &max, e))
		return -1;
	if (max < 1 || max > 20000)
		return err_set(e, 0, "`max_results` must be between 1 and 20000");
	msh_path(cwd_in ? cwd_in : ".", cwd);
	g.matches = json_array();
	g.max = (size_t)max;
	g.w = &w;
	if (pattern[0] == '/') {
		/* Absolute: walk from / and match the path without its leading '/'. */
		snprintf(cwd, sizeof(cwd), "/");
		pattern++;
	}
	/* "**" spans directories: with fnmatch without FNM_PATHNAME, '*' already
	 * matches '/', so "src/ ** /x.c" becomes "src/ * x.c" (spaces for the comment). */
	{
		size_t o = 0;
		for (const char *p = pattern; *p && o < sizeof(g.pat) - 1;) {
			if (p[0] == '*' && p[1] == '*') {
				g.pat[o++] = '*';
				p += p[2] == '/' ? 3 : 2;
			} else {
				g.pat[o++] = *p++;
			}
		}
		g.pat[o] = '\0';
	}
	walk(&w, cwd, "", glob_one, &g, 0);
	json_array_foreach(g.matches, i, m)
		buf_appendf(&text, NULL, "%s%s\n", cwd[1] ? "" : "/", json_string_value(m));
	if (g.truncated || w.stopped)
		buf_appendf(&text, NULL, "[... stopped after %zu matches / %zu entries visited: narrow the pattern ...]\n",
			    json_array_size(g.matches), w.visited);
	if (!json_array_size(g.matches))
		mcp_result_text(res, "no match for %s in %s", pattern, cwd);
	else
		mcp_result_textn(res, buf_str(&text), text.len);
	mcp_result_structured(res, json_pack("{s:s, s:o, s:b}", "cwd", cwd, "matches", g.matches,
					     "truncated", g.truncated || w.stopped));
	buf_free(&text);
	return 0;
}

struct grep_ctx {
	regex_t re;
	const char *fixed;
	bool icase, use_re;
	const char *include;
	size_t max, count, files;
	bool truncated;
	struct buf text;
	json_t *matches;
	struct walk *w;
	struct mcp_call *call;
};

static bool line_hits(struct grep_ctx *g, const char *line)
{
	if (g->use_re)
		return regexec(&g->re, line, 0, NULL, 0) == 0;
	return (g->icase ? strcasestr(line, g->fixed) : strstr(line, g->fixed)) != NULL;
}

static void grep_file(void *ud, const char *full, const char *rel, const struct stat *st)
{
	struct grep_ctx *g = ud;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	FILE *f;
	char head[4096];
	size_t hn;

	(void)rel;
	if (!S_ISREG(st->st_mode) || st->st_size > MAX_GREP_FILE || g->truncated)
		return;
	if (g->include && fnmatch(g->include, strrchr(full, '/') ? strrchr(full, '/') + 1 : full, 0))
		return;
	if (mcp_call_cancelled(g->call)) {
		g->w->stopped = true;
		return;
	}
	f = fopen(full, "re");
	if (!f)
		return;
	hn = fread(head, 1, sizeof(head), f);
	if (memchr(head, '\0', hn)) { /* binary */
		fclose(f);
		return;
	}
	rewind(f);
	g->files++;
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!line_hits(g, line))
			continue;
		if (g->count == g->max) {
			g->truncated = true;
			g->w->stopped = true;
			break;
		}
		g->count++;
		if (n > MAX_LINE_SHOWN)
			line[MAX_LINE_SHOWN] = '\0';
		buf_appendf(&g->text, NULL, "%s:%zu:%s%s\n", full, lineno, line, n > MAX_LINE_SHOWN ? " [...]" : "");
		{
			char *cl = mcp_utf8_clean(line, strlen(line), NULL);
			json_array_append_new(g->matches, json_pack("{s:s, s:I, s:s}", "path", full, "line",
								    (json_int_t)lineno, "text", cl ? cl : ""));
			free(cl);
		}
	}
	free(line);
	fclose(f);
}

static int grep_tool(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *pattern, *in = ".";
	bool recursive = true, fixed = false;
	long long max;
	char path[PATH_MAX];
	struct grep_ctx g = {.text = BUF_INIT(8u << 20), .call = call};
	struct walk w = {0};
	struct stat st;
	char *clean;
	size_t clen;

	if (cj_req_str(args, "pattern", &pattern, e) || cj_get_str(args, "path", ".", &in, e) ||
	    cj_get_bool(args, "recursive", true, &recursive, e) ||
	    cj_get_bool(args, "ignore_case", false, &g.icase, e) ||
	    cj_get_bool(args, "fixed_strings", false, &fixed, e) ||
	    cj_get_str(args, "include", NULL, &g.include, e) ||
	    cj_get_int(args, "max_matches", 200, &max, e))
		return -1;
	if (max < 1 || max > 10000)
		return err_set(e, 0, "`max_matches` must be between 1 and 10000");
	g.max = (size_t)max;
	g.w = &w;
	g.fixed = pattern;
	g.use_re = !fixed;
	if (g.use_re) {
		int rc = regcomp(&g.re, pattern, REG_EXTENDED | REG_NOSUB | (g.icase ? REG_ICASE : 0));
		if (rc) {
			char msg[128];
			regerror(rc, &g.re, msg, sizeof(msg));
			return err_set(e, 0, "`pattern` is not a valid extended regular expression: %s", msg);
		}
	}
	msh_path(in, path);
	g.matches = json_array();
	if (stat(path, &st) == -1) {
		mcp_result_error(res, "grep %s: %s", path, strerror(errno));
	} else {
		if (S_ISDIR(st.st_mode)) {
			if (recursive)
				walk(&w, path, "", grep_file, &g, 0);
			else
				mcp_result_error(res, "grep %s: Is a directory (set recursive)", path);
		} else {
			grep_file(&g, path, path, &st);
		}
		if (g.truncated || w.stopped)
			buf_appendf(&g.text, NULL, "[... stopped after %zu matches: narrow the search or raise max_matches ...]\n", g.count);
		clean = mcp_utf8_clean(buf_str(&g.text), g.text.len, &clen);
		if (!g.count)
			mcp_result_text(res, "no match for %s in %s (%zu files searched)", pattern, path, g.files);
		else if (clean)
			mcp_result_textn(res, clean, clen);
		free(clean);
	}
	mcp_result_structured(res, json_pack("{s:o, s:I, s:b}", "matches", g.matches, "count",
					     (json_int_t)g.count, "truncated", g.truncated || w.stopped));
	if (g.use_re)
		regfree(&g.re);
	buf_free(&g.text);
	return 0;
}

int msh_search_register(struct mcp_server *s, struct msh_conf *c, struct err *e)
{
	const struct mcp_tool tools[] = {
		{.name = "glob", .title = "Find files by name pattern",
		 .description = "Find paths matching a shell pattern, e.g. \"*.py\", \"src/**/*.c\" "
				"(** spans directories), relative to cwd (default: the home directory) or "
				"absolute. Hidden files need an explicit leading dot. Bounded by max_results "
				"(default 1000).",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"pattern\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\"},"
				 "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20000}},"
				 "\"required\":[\"pattern\"],\"additionalProperties\":false}",
		 .read_only = true, .fn = glob_tool, .ud = c},
		{.name = "grep", .title = "Search file contents",
		 .description = "Search text files for lines matching a POSIX extended regular expression "
				"(or a fixed string with fixed_strings). path is a file or a directory "
				"(searched recursively by default; binary files and .git are skipped). "
				"include filters file names (e.g. \"*.c\"). Answers path:line:text, at most "
				"max_matches (default 200).",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
				 "\"recursive\":{\"type\":\"boolean\"},\"ignore_case\":{\"type\":\"boolean\"},"
				 "\"fixed_strings\":{\"type\":\"boolean\"},\"include\":{\"type\":\"string\"},"
				 "\"max_matches\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000}},"
				 "\"required\":[\"pattern\"],\"additionalProperties\":false}",
		 .read_only = true, .fn = grep_tool, .ud = c},
	};

	for (size_t i = 0; i < ARRAY_LEN(tools); i++)
		if (mcp_server_add_tool(s, &tools[i], e))
			return -1;
	return 0;
}
