/* glob and grep: bounded searches over the file tree, in-process (no
 * fork, which is slow under gVisor).  Both stop at a result limit and at a
 * limit of entries visited, and say so, so a search of / cannot run away. */
#include "mcp/shell/shell.h"
#include "mcp/lib/cap.h"
#include "mcp/lib/result.h"
#include "common/json.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_VISIT 200000
#define MAX_DEPTH 4096 /* a guard only: PATH_MAX ends deeper walks first */
#define MAX_LINE_SHOWN 400
#define MAX_GREP_FILE (16u << 20)

/* A walk keeps no recursion and no per-level buffers: directories still to
 * visit wait on a heap stack as paths relative to the root, so a 500-deep
 * tree costs what 500 short strings cost, and a very wide one is bounded by
 * MAX_VISIT.  Symlinks are reported, never followed, so loops cannot form. */
struct walk {
	const char *root;
	struct mcp_call *call; /* checked for cancellation; may be NULL */
	size_t visited;        /* entries seen */
	size_t unreadable;     /* directories that could not be opened */
	size_t too_long;       /* directories whose path exceeds PATH_MAX */
	bool stopped;          /* MAX_VISIT, a result limit or cancellation */
	bool cancelled;
};

struct pending {
	char *rel;
	unsigned depth;
};

/* Called for every entry below the root: full is root/rel, type a DT_*
 * value (DT_UNKNOWN resolved by lstat). */
typedef void (*walk_fn)(void *ud, const char *full, const char *rel, unsigned char type);

static bool walk_skip_dir(const char *full, const char *name)
{
	return !strcmp(name, ".git") || !strncmp(full, "/proc/", 6) || !strncmp(full, "/sys/", 5);
}

static int push(struct pending **st, size_t *n, size_t *cap, char *rel, unsigned depth)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct pending *p = realloc(*st, ncap * sizeof(*p));
		if (!p)
			return -1;
		*st = p;
		*cap = ncap;
	}
	(*st)[(*n)++] = (struct pending){rel, depth};
	return 0;
}

/* Visits one directory: fn for each entry, subdirectories pushed so that
 * they are visited in the order they were read. */
static void walk_dir(struct walk *w, const char *rel, unsigned depth, walk_fn fn, void *ud,
		     struct pending **st, size_t *n, size_t *cap)
{
	AUTOBUF struct buf full = BUF_INIT(PATH_MAX - 1);
	AUTOBUF struct buf crel = BUF_INIT(PATH_MAX - 1);
	size_t first = *n, dlen;
	struct dirent *de;
	DIR *d;

	if (buf_appendf(&full, NULL, "%s%s%s", w->root,
			*rel && w->root[strlen(w->root) - 1] != '/' ? "/" : "", rel)) {
		w->too_long++;
		return;
	}
	d = opendir(buf_str(&full));
	if (!d) {
		if (errno == ENAMETOOLONG)
			w->too_long++;
		else
			w->unreadable++;
		return;
	}
	dlen = full.len;
	while (!w->stopped && (de = readdir(d)) != NULL) {
		unsigned char type = de->d_type;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->visited > MAX_VISIT) {
			w->stopped = true;
			break;
		}
		if ((w->visited & 255) == 0 && w->call && mcp_call_cancelled(w->call)) {
			w->stopped = w->cancelled = true;
			break;
		}
		full.len = dlen;
		buf_reset(&crel);
		if (buf_appendf(&full, NULL, "%s%s", full.data[dlen - 1] == '/' ? "" : "/", de->d_name) ||
		    buf_appendf(&crel, NULL, "%s%s%s", rel, *rel ? "/" : "", de->d_name)) {
			full.data[full.len = dlen] = '\0';
			if (type == DT_DIR || type == DT_UNKNOWN)
				w->too_long++;
			continue;
		}
		if (type == DT_UNKNOWN) {
			struct stat sb;
			if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == -1)
				continue;
			type = S_ISDIR(sb.st_mode) ? DT_DIR : S_ISREG(sb.st_mode) ? DT_REG
			       : S_ISLNK(sb.st_mode) ? DT_LNK : DT_UNKNOWN;
		}
		fn(ud, buf_str(&full), buf_str(&crel), type);
		if (type == DT_DIR && !walk_skip_dir(buf_str(&full), de->d_name)) {
			char *r;
			if (depth + 1 >= MAX_DEPTH) {
				w->too_long++;
				continue;
			}
			r = buf_take(&crel, NULL);
			if (!r || push(st, n, cap, r, depth + 1) == -1) {
				free(r);
				w->stopped = true; /* out of memory: say the result is partial */
			}
		}
	}
	closedir(d);
	/* Reverse what this directory pushed: the stack pops its first first. */
	for (size_t i = first, j = *n; i + 1 < j; i++, j--) {
		struct pending t = (*st)[i];
		(*st)[i] = (*st)[j - 1];
		(*st)[j - 1] = t;
	}
}

/* Depth-first walk below w->root, calling fn for each entry; skips the
 * contents of .git, /proc and /sys. */
static void walk(struct walk *w, walk_fn fn, void *ud)
{
	struct pending *st = NULL;
	size_t n = 0, cap = 0;

	walk_dir(w, "", 0, fn, ud, &st, &n, &cap);
	while (n > 0) {
		struct pending p = st[--n];
		if (!w->stopped)
			walk_dir(w, p.rel, p.depth, fn, ud, &st, &n, &cap);
		free(p.rel);
	}
	free(st);
}

/* One line on what a walk left out, appended to text; nothing when whole. */
static void walk_note(const struct walk *w, struct buf *text)
{
	if (w->cancelled)
		buf_appendf(text, NULL, "[... cancelled after %zu entries ...]\n", w->visited);
	else if (w->visited > MAX_VISIT)
		buf_appendf(text, NULL, "[... stopped after visiting %d entries: narrow the path or pattern ...]\n",
			    MAX_VISIT);
	if (w->unreadable || w->too_long)
		buf_appendf(text, NULL, "[... %zu directories not searched: %zu not readable, %zu with paths longer than %d bytes ...]\n",
			    w->unreadable + w->too_long, w->unreadable, w->too_long, PATH_MAX);
}

static json_t *walk_json(const struct walk *w)
{
	return json_pack("{s:I, s:I, s:I}", "visited", (json_int_t)w->visited, "unreadable_dirs",
			 (json_int_t)w->unreadable, "too_long_dirs", (json_int_t)w->too_long);
}

struct glob_ctx {
	char pat[PATH_MAX];
	json_t *matches;
	size_t max;
	bool truncated;
	struct walk *w;
};

/* True when path matches pat segment by segment: '*', '?' and [...] stay
 * within one segment, a leading '.' is matched only by a '.', and a
 * segment that is exactly "**" matches any number of segments (none
 * included) that are not hidden. */
static bool glob_match(const char *pat, const char *path)
{
	const char *ps, *qs;
	char seg[NAME_MAX + 1], name[NAME_MAX + 1];
	size_t pn, qn;

	if (strncmp(pat, "**", 2) == 0 && (pat[2] == '/' || !pat[2])) {
		if (!pat[2])
			return true;
		for (const char *at = path;; at++) {
			if (glob_match(pat + 3, at))
				return true;
			if (*at == '.') /* "**" does not enter hidden directories */
				return false;
			at = strchr(at, '/');
			if (!at)
				return false;
		}
	}
	ps = strchr(pat, '/');
	qs = strchr(path, '/');
	pn = ps ? (size_t)(ps - pat) : strlen(pat);
	qn = qs ? (size_t)(qs - path) : strlen(path);
	if (pn > NAME_MAX || qn > NAME_MAX)
		return false;
	memcpy(seg, pat, pn);
	seg[pn] = '\0';
	memcpy(name, path, qn);
	name[qn] = '\0';
	if (fnmatch(seg, name, FNM_PERIOD) != 0)
		return false;
	if (!ps || !qs)
		return !ps && !qs;
	return glob_match(ps + 1, qs + 1);
}

static void glob_one(void *ud, const char *full, const char *rel, unsigned char type)
{
	struct glob_ctx *g = ud;

	(void)full;
	(void)type;
	if (!glob_match(g->pat, rel))
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
	if (strlen(pattern) >= sizeof(g.pat))
		return err_set(e, 0, "`pattern` is longer than %zu bytes", sizeof(g.pat) - 1);
	snprintf(g.pat, sizeof(g.pat), "%s", pattern);
	w.root = cwd;
	w.call = call;
	walk(&w, glob_one, &g);
	json_array_foreach(g.matches, i, m)
		buf_appendf(&text, NULL, "%s%s\n", cwd[1] ? "" : "/", json_string_value(m));
	if (!json_array_size(g.matches)) {
		buf_reset(&text);
		buf_appendf(&text, NULL, "no match for %s in %s\n", pattern, cwd);
	}
	if (g.truncated)
		buf_appendf(&text, NULL, "[... stopped after %zu matches: narrow the pattern or raise max_results ...]\n",
			    json_array_size(g.matches));
	walk_note(&w, &text);
	mcp_result_textn(res, buf_str(&text), text.len);
	mcp_result_structured(res, json_pack("{s:s, s:o, s:b, s:o}", "cwd", cwd, "matches", g.matches,
					     "truncated", g.truncated || w.stopped || w.unreadable || w.too_long,
					     "walk", walk_json(&w)));
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

/* Reads fd's regular file of size bytes into a new NUL-terminated buffer:
 * one read for most files, which matters when every system call is a trip
 * through gVisor's sentry.  NULL on error; *len gets what was read. */
static char *slurp(int fd, size_t size, size_t *len)
{
	char *data = malloc(size + 1);
	size_t got = 0;

	if (!data)
		return NULL;
	while (got < size) {
		ssize_t r = read(fd, data + got, size - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	data[got] = '\0';
	*len = got;
	return data;
}

static void grep_hit(struct grep_ctx *g, const char *full, size_t lineno, char *line, size_t n)
{
	char *cl;

	g->count++;
	if (n > MAX_LINE_SHOWN)
		line[MAX_LINE_SHOWN] = '\0';
	buf_appendf(&g->text, NULL, "%s:%zu:%s%s\n", full, lineno, line, n > MAX_LINE_SHOWN ? " [...]" : "");
	cl = mcp_utf8_clean(line, strlen(line), NULL);
	json_array_append_new(g->matches, json_pack("{s:s, s:I, s:s}", "path", full, "line",
						    (json_int_t)lineno, "text", cl ? cl : ""));
	free(cl);
}

static void grep_file(void *ud, const char *full, const char *rel, unsigned char type)
{
	struct grep_ctx *g = ud;
	size_t lineno = 0, len;
	struct stat st;
	char *data, *p, *end;
	int fd;

	(void)rel;
	if (type != DT_REG || g->truncated)
		return;
	if (g->include && fnmatch(g->include, strrchr(full, '/') ? strrchr(full, '/') + 1 : full, 0))
		return;
	if (mcp_call_cancelled(g->call)) {
		g->w->stopped = g->w->cancelled = true;
		return;
	}
	/* O_NONBLOCK: a FIFO swapped in since the listing must not hang us. */
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd == -1)
		return;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size > MAX_GREP_FILE) {
		close(fd);
		return;
	}
	data = st.st_size ? slurp(fd, (size_t)st.st_size, &len) : NULL;
	close(fd);
	g->files++;
	if (!data)
		return;
	/* Binary: a NUL in the first 4 KiB, as grep(1) decides. */
	if (memchr(data, '\0', len < 4096 ? len : 4096)) {
		free(data);
		return;
	}
	end = data + len;
	for (p = data; p < end; ) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!nl)
			nl = end;
		*nl = '\0';
		n = (size_t)(nl - p);
		lineno++;
		if (line_hits(g, p)) {
			if (g->count == g->max) {
				g->truncated = true;
				g->w->stopped = true;
				break;
			}
			grep_hit(g, full, lineno, p, n);
		}
		p = nl + 1;
	}
	free(data);
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
			w.root = path;
			w.call = call;
			if (recursive)
				walk(&w, grep_file, &g);
			else
				mcp_result_error(res, "grep %s: Is a directory (set recursive)", path);
		} else {
			grep_file(&g, path, path, S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN);
		}
		if (!g.count)
			buf_appendf(&g.text, NULL, "no match for %s in %s (%zu files searched)\n", pattern, path, g.files);
		if (g.truncated)
			buf_appendf(&g.text, NULL, "[... stopped after %zu matches: narrow the search or raise max_matches ...]\n", g.count);
		walk_note(&w, &g.text);
		clean = mcp_utf8_clean(buf_str(&g.text), g.text.len, &clen);
		if (clean && !res->is_error)
			mcp_result_textn(res, clean, clen);
		free(clean);
	}
	mcp_result_structured(res, json_pack("{s:o, s:I, s:b, s:o}", "matches", g.matches, "count",
					     (json_int_t)g.count, "truncated",
					     g.truncated || w.stopped || w.unreadable || w.too_long,
					     "walk", walk_json(&w)));
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
