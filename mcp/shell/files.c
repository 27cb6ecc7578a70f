/* File tools: read_file, write_file, edit_file, list_directory, stat_path,
 * delete_path.  They run in mcp-shell's own process (as the sandbox user),
 * so they cost no fork.  Every size is bounded by --max-file, and every
 * failure is a tool result that names the tool, the path and the reason:
 * "read_file /x: No such file or directory". */
#include "mcp/shell/shell.h"
#include "mcp/lib/cap.h"
#include "common/b64.h"
#include "common/json.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *msh_path(const char *in, char *out)
{
	const char *home = getenv("HOME");

	if (in[0] == '/' || !home || !*home)
		snprintf(out, PATH_MAX, "%s", in);
	else if (in[0] == '~' && (in[1] == '/' || !in[1]))
		snprintf(out, PATH_MAX, "%s%s", home, in + 1);
	else
		snprintf(out, PATH_MAX, "%s/%s", home, in);
	return out;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "other";
}

/* Reads up to max bytes of path from off into *data (caller frees).
 * Returns bytes read, or -1 with errno; *size receives the file size. */
static ssize_t read_part(const char *path, off_t off, size_t max, char **data, off_t *size)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;
	char *buf;

	if (fd == -1 || fstat(fd, &st) == -1)
		return -1;
	if (S_ISDIR(st.st_mode))
		return errno = EISDIR, -1;
	*size = st.st_size;
	buf = malloc(max + 1);
	if (!buf)
		return errno = ENOMEM, -1;
	while (got < max) {
		ssize_t n = pread(fd, buf + got, max - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*data = buf;
	return (ssize_t)got;
}

static int read_file(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	struct msh_conf *c = mcp_call_ud(call);
	const char *in;
	long long off, len;
	char path[PATH_MAX], *data = NULL, *text;
	off_t size = 0;
	ssize_t n;
	size_t tlen;
	bool binary, more;
	json_t *sc;

	if (cj_req_str(args, "path", &in, e) || cj_get_int(args, "offset", 0, &off, e) ||
	    cj_get_int(args, "length", (long long)c->max_file, &len, e))
		return -1;
	if (off < 0 || len < 0)
		return err_set(e, 0, "`offset` and `length` must not be negative");
	if ((unsigned long long)len > c->max_file)
		len = (long long)c->max_file;
	msh_path(in, path);
	n = read_part(path, (off_t)off, (size_t)len, &data, &size);
	if (n < 0) {
		mcp_result_error(res, "read_file %s: %s%s", path, strerror(errno),
				 errno == EISDIR ? " (use list_directory)" : "");
		return 0;
	}
	more = (off_t)off + n < size;
	binary = mcp_looks_binary(data, (size_t)n);
	text = binary ? b64_encode_alloc(data, (size_t)n, 0, &tlen) : mcp_utf8_clean(data, (size_t)n, &tlen);
	free(data);
	if (!text)
		return err_set(e, ENOMEM, "read_file");
	sc = json_pack("{s:s, s:I, s:I, s:I, s:s, s:b, s:s%}", "path", path, "size", (json_int_t)size,
		       "offset", (json_int_t)off, "length", (json_int_t)n, "encoding",
		       binary ? "base64" : "utf8", "truncated", more, "content", text, tlen);
	if (binary)
		mcp_result_text(res, "%s is binary: %zd bytes from offset %lld, base64-encoded:\n%s", path, n, off, text);
	else
		mcp_result_textn(res, text, tlen);
	if (more)
		mcp_result_text(res, "[... %lld more bytes: the file has %lld; read on with offset %lld ...]",
				(long long)(size - (off_t)off - n), (long long)size, (long long)(off + n));
	mcp_result_structured(res, sc);
	free(text);
	return 0;
}

static int write_all_to(const char *path, const void *data, size_t len, int flags, mode_t mode)
{
	AUTOCLOSE int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, mode);

	if (fd == -1 || util_write_all(fd, data, len) == -1)
		return -1;
	return fsync(fd) == -1 && errno != EINVAL ? -1 : 0;
}

static int write_file(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	struct msh_conf *c = mcp_call_ud(call);
	const char *in, *content, *enc = "utf8", *mode_s = NULL;
	bool mkdirs = false, append = false;
	char path[PATH_MAX];
	unsigned char *bin = NULL;
	size_t len;
	long mode = 0644;

	if (cj_req_str(args, "path", &in, e) || cj_req_str(args, "content", &content, e) ||
	    cj_get_str(args, "encoding", "utf8", &enc, e) || cj_get_str(args, "mode", NULL, &mode_s, e) ||
	    cj_get_bool(args, "create_dirs", false, &mkdirs, e) || cj_get_bool(args, "append", false, &append, e))
		return -1;
	if (mode_s) {
		char *end;
		mode = strtol(mode_s, &end, 8);
		if (*end || mode < 0 || mode > 07777)
			return err_set(e, 0, "`mode` must be octal like \"0644\"");
	}
	len = strlen(content);
	if (strcmp(enc, "base64") == 0) {
		ssize_t n;
		bin = malloc(b64_decoded_max(len) + 1);
		if (!bin)
			return err_set(e, ENOMEM, "write_file");
		n = b64_decode(content, len, B64_PAD_OPTIONAL | B64_SPACE, bin, b64_decoded_max(len));
		if (n < 0) {
			free(bin);
			return err_set(e, 0, "`content` is not valid base64: %s", b64_strerror(n));
		}
		len = (size_t)n;
	} else if (strcmp(enc, "utf8") != 0) {
		return err_set(e, 0, "`encoding` must be \"utf8\" or \"base64\"");
	}
	if (len > c->max_file) {
		free(bin);
		mcp_result_error(res, "write_file: %zu bytes is more than the limit of %zu", len, c->max_file);
		return 0;
	}
	msh_path(in, path);
	if ((mkdirs && util_mkdir_parents(path, 0755) == -1) ||
	    write_all_to(path, bin ? (void *)bin : (const void *)content, len, append ? O_APPEND : O_TRUNC,
			 (mode_t)mode) == -1) {
		mcp_result_error(res, "write_file %s: %s%s", path, strerror(errno),
				 errno == ENOENT && !mkdirs ? " (set create_dirs to create the directory)" : "");
	} else {
		if (mode_s)
			chmod(path, (mode_t)mode);
		mcp_result_text(res, "wrote %zu bytes to %s", len, path);
		mcp_result_structured(res, json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len));
	}
	free(bin);
	return 0;
}

static int edit_file(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	struct msh_conf *c = mcp_call_ud(call);
	const char *in, *old_s, *new_s;
	bool all = false;
	char path[PATH_MAX], *data = NULL, *out, *o;
	const char *p, *first = NULL;
	size_t olen, nlen, count = 0, line = 1;
	off_t size;
	ssize_t n;
	struct stat st;

	if (cj_req_str(args, "path", &in, e) || cj_req_str(args, "old_str", &old_s, e) ||
	    cj_req_str(args, "new_str", &new_s, e) || cj_get_bool(args, "replace_all", false, &all, e))
		return -1;
	if (!*old_s)
		return err_set(e, 0, "`old_str` must not be empty");
	msh_path(in, path);
	n = read_part(path, 0, c->max_file, &data, &size);
	if (n < 0 || stat(path, &st) == -1) {
		mcp_result_error(res, "edit_file %s: %s", path, strerror(errno));
		free(data);
		return 0;
	}
	if (size > n) {
		free(data);
		mcp_result_error(res, "edit_file %s: the file is larger than the limit of %zu bytes", path, c->max_file);
		return 0;
	}
	olen = strlen(old_s);
	nlen = strlen(new_s);
	for (p = data; (p = memmem(p, (size_t)(data + n - p), old_s, olen)) != NULL; p += olen) {
		if (!first)
			first = p;
		count++;
	}
	if (count == 0 || (count > 1 && !all)) {
		if (count == 0)
			mcp_result_error(res, "edit_file %s: old_str was not found; read the file and copy the text exactly (whitespace included)", path);
		else
			mcp_result_error(res, "edit_file %s: old_str occurs %zu times; add surrounding lines to make it unique, or set replace_all", path, count);
		free(data);
		return 0;
	}
	if ((size_t)n - count * olen + count * nlen > c->max_file) {
		mcp_result_error(res, "edit_file %s: the edited file would be %zu bytes, more than the limit of %zu",
				 path, (size_t)n - count * olen + count * nlen, c->max_file);
		free(data);
		return 0;
	}
	out = malloc((size_t)n + count * nlen + 1);
	if (!out) {
		free(data);
		return err_set(e, ENOMEM, "edit_file");
	}
	o = out;
	for (const char *q = data;;) {
		const char *hit = memmem(q, (size_t)(data + n - q), old_s, olen);
		if (!hit) {
			memcpy(o, q, (size_t)(data + n - q));
			o += data + n - q;
			break;
		}
		memcpy(o, q, (size_t)(hit - q));
		o += hit - q;
		memcpy(o, new_s, nlen);
		o += nlen;
		q = hit + olen;
	}
	for (const char *q = data; q < first; q++)
		line += *q == '\n';
	if (write_all_to(path, out, (size_t)(o - out), O_TRUNC, st.st_mode & 07777) == -1)
		mcp_result_error(res, "edit_file %s: %s", path, strerror(errno));
	else {
		mcp_result_text(res, "replaced %zu occurrence%s in %s (first at line %zu)", count,
				count == 1 ? "" : "s", path, line);
		mcp_result_structured(res, json_pack("{s:s, s:I, s:I}", "path", path, "replacements",
						     (json_int_t)count, "line", (json_int_t)line));
	}
	free(out);
	free(data);
	return 0;
}

struct listing {
	json_t *entries;
	struct buf text;
	size_t max, n;
	bool truncated;
};

static void list_dir(struct listing *l, const char *root, const char *rel, bool recursive, int depth)
{
	char dir[2 * PATH_MAX + 2];
	struct dirent **names = NULL;
	int n;

	snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel);
	n = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char child[PATH_MAX + 256], full[2 * PATH_MAX + 512];
		struct stat st;
		const char *nm = names[i]->d_name;

		if (!strcmp(nm, ".") || !strcmp(nm, "..") || l->truncated) {
			free(names[i]);
			continue;
		}
		if (l->n == l->max) {
			l->truncated = true;
			free(names[i]);
			continue;
		}
		snprintf(child, sizeof(child), "%s%s%s", rel, *rel ? "/" : "", nm);
		snprintf(full, sizeof(full), "%s/%s", root, child);
		if (lstat(full, &st) == -1)
			memset(&st, 0, sizeof(st));
		json_array_append_new(l->entries, json_pack("{s:s, s:s, s:I}", "name", child, "type",
							   type_name(st.st_mode), "size", (json_int_t)st.st_size));
		buf_appendf(&l->text, NULL, "%s%s%s\n", child, S_ISDIR(st.st_mode) ? "/" : "",
			    S_ISLNK(st.st_mode) ? " -> (symlink)" : "");
		l->n++;
		if (recursive && S_ISDIR(st.st_mode) && depth < 32)
			list_dir(l, root, child, recursive, depth + 1);
		free(names[i]);
	}
	free(names);
}

static int list_directory(struct mcp_call *call, const json_t *args, struct mcp_result *res,
			  struct err *e)
{
	const char *in = ".";
	bool recursive = false;
	long long max;
	char path[PATH_MAX];
	struct listing l = {.text = BUF_INIT(4u << 20)};
	struct stat st;

	(void)call;
	if (cj_get_str(args, "path", ".", &in, e) || cj_get_bool(args, "recursive", false, &recursive, e) ||
	    cj_get_int(args, "max_entries", 1000, &max, e))
		return -1;
	if (max < 1 || max > 20000)
		return err_set(e, 0, "`max_entries` must be between 1 and 20000");
	msh_path(in, path);
	if (stat(path, &st) == -1) {
		mcp_result_error(res, "list_directory %s: %s", path, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		mcp_result_error(res, "list_directory %s: Not a directory (use read_file or stat_path)", path);
		return 0;
	}
	l.max = (size_t)max;
	l.entries = json_array();
	list_dir(&l, path, "", recursive, 0);
	if (l.truncated)
		buf_appendf(&l.text, NULL, "[... stopped at %zu entries: raise max_entries or list a subdirectory ...]\n", l.n);
	mcp_result_textn(res, l.n ? buf_str(&l.text) : "(empty directory)\n", l.n ? l.text.len : 18);
	mcp_result_structured(res, json_pack("{s:s, s:o, s:b}", "path", path, "entries", l.entries,
					     "truncated", l.truncated));
	buf_free(&l.text);
	return 0;
}

static int stat_path(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *in;
	char path[PATH_MAX], mode[8], when[32], target[PATH_MAX] = "";
	struct stat st;
	struct tm tm;
	json_t *sc;

	(void)call;
	if (cj_req_str(args, "path", &in, e))
		return -1;
	msh_path(in, path);
	if (lstat(path, &st) == -1) {
		if (errno == ENOENT) {
			mcp_result_text(res, "%s does not exist", path);
			mcp_result_structured(res, json_pack("{s:s, s:b}", "path", path, "exists", 0));
		} else {
			mcp_result_error(res, "stat_path %s: %s", path, strerror(errno));
		}
		return 0;
	}
	snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
	gmtime_r(&st.st_mtime, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sc = json_pack("{s:s, s:b, s:s, s:I, s:s, s:i, s:i, s:s}", "path", path, "exists", 1, "type",
		       type_name(st.st_mode), "size", (json_int_t)st.st_size, "mode", mode, "uid",
		       (int)st.st_uid, "gid", (int)st.st_gid, "modified", when);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		json_object_set_new(sc, "link_target", json_string(target));
	}
	mcp_result_text(res, "%s: %s, %lld bytes, mode %s, uid %d, gid %d, modified %s%s%s", path,
			type_name(st.st_mode), (long long)st.st_size, mode, (int)st.st_uid, (int)st.st_gid,
			when, *target ? ", -> " : "", target);
	mcp_result_structured(res, sc);
	return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) == -1 ? -1 : 0;
}

/* True when path, with every symlink, `.`, `..` and slash resolved, is
 * the root, the home directory or one of its ancestors: "~/", "~/.",
 * "/home/agent/../agent/" and a link to / all name one of them. */
static bool protected_dir(const char *path)
{
	char real[PATH_MAX], home[PATH_MAX];
	const char *h = getenv("HOME");
	size_t n;

	if (!realpath(path, real))
		return false; /* nothing there (lstat says so), or not resolvable */
	if (strcmp(real, "/") == 0)
		return true;
	if (!h || !*h || !realpath(h, home))
		return false;
	n = strlen(real);
	return strncmp(home, real, n) == 0 && (home[n] == '\0' || home[n] == '/');
}

static int delete_path(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	const char *in;
	bool recursive = false;
	char path[PATH_MAX];
	struct stat st;
	int rc;

	(void)call;
	if (cj_req_str(args, "path", &in, e) || cj_get_bool(args, "recursive", false, &recursive, e))
		return -1;
	msh_path(in, path);
	if (lstat(path, &st) == -1) {
		mcp_result_error(res, "delete_path %s: %s", path, strerror(errno));
		return 0;
	}
	/* A symlink itself is only unlinked; a directory (a trailing slash
	 * follows a link) is checked where it really is. */
	if (S_ISDIR(st.st_mode) && protected_dir(path)) {
		mcp_result_error(res, "delete_path %s: refusing to delete the root directory, the home "
				 "directory or a directory that holds it", path);
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		rc = recursive ? nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) : rmdir(path);
	else
		rc = unlink(path);
	if (rc == -1)
		mcp_result_error(res, "delete_path %s: %s%s", path, strerror(errno),
				 errno == ENOTEMPTY || errno == EEXIST ? " (set recursive to delete its contents)" : "");
	else
		mcp_result_text(res, "deleted %s%s", path, S_ISDIR(st.st_mode) ? " (directory)" : "");
	return 0;
}

int msh_files_register(struct mcp_server *s, struct msh_conf *c, struct err *e)
{
	static char read_desc[512];
	const struct mcp_tool tools[] = {
		{.name = "read_file", .title = "Read a file", .description = read_desc,
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"path\":{\"type\":\"string\",\"description\":\"Absolute, or relative to the home directory.\"},"
				 "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Byte offset to start at (default 0).\"},"
				 "\"length\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Bytes to read at most.\"}},"
				 "\"required\":[\"path\"],\"additionalProperties\":false}",
		 .read_only = true, .fn = read_file, .ud = c},
		{.name = "write_file", .title = "Write a file",
		 .description = "Create or overwrite a file with the given content (utf8 text, or base64 "
				"for binary data). create_dirs makes missing parent directories; append adds "
				"to the end instead of replacing; mode sets permissions (octal string, e.g. "
				"\"0755\" for a script).",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
				 "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf8\",\"base64\"]},"
				 "\"mode\":{\"type\":\"string\",\"description\":\"Octal permissions, e.g. \\\"0644\\\".\"},"
				 "\"create_dirs\":{\"type\":\"boolean\"},\"append\":{\"type\":\"boolean\"}},"
				 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
		 .destructive = true, .fn = write_file, .ud = c},
		{.name = "edit_file", .title = "Edit a file (replace text)",
		 .description = "Replace old_str with new_str in a text file. old_str must match the file "
				"exactly (whitespace and indentation included) and occur exactly once, unless "
				"replace_all is true. Include enough surrounding lines to make it unique.",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"path\":{\"type\":\"string\"},\"old_str\":{\"type\":\"string\"},"
				 "\"new_str\":{\"type\":\"string\"},\"replace_all\":{\"type\":\"boolean\"}},"
				 "\"required\":[\"path\",\"old_str\",\"new_str\"],\"additionalProperties\":false}",
		 .destructive = true, .fn = edit_file, .ud = c},
		{.name = "list_directory", .title = "List a directory",
		 .description = "List the entries of a directory (sorted; directories end with '/'), "
				"optionally recursively, with type and size in the structured result. "
				"Stops at max_entries (default 1000).",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"path\":{\"type\":\"string\",\"description\":\"Default: the home directory.\"},"
				 "\"recursive\":{\"type\":\"boolean\"},"
				 "\"max_entries\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20000}},"
				 "\"additionalProperties\":false}",
		 .read_only = true, .fn = list_directory, .ud = c},
		{.name = "stat_path", .title = "File information",
		 .description = "Whether a path exists, and its type, size, permissions, owner and "
				"modification time (symlinks are not followed).",
		 .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
				 "\"required\":[\"path\"],\"additionalProperties\":false}",
		 .read_only = true, .fn = stat_path, .ud = c},
		{.name = "delete_path", .title = "Delete a file or directory",
		 .description = "Delete a file, a symlink or an empty directory; with recursive, a "
				"directory and everything in it.",
		 .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
				 "\"recursive\":{\"type\":\"boolean\"}},"
				 "\"required\":[\"path\"],\"additionalProperties\":false}",
		 .destructive = true, .fn = delete_path, .ud = c},
	};

	snprintf(read_desc, sizeof(read_desc),
		 "Read a file. Text comes back as text; binary files (detected) as base64 with "
		 "encoding \"base64\". At most %zu bytes per call: use offset and length to read big "
		 "files in parts (the answer says how much is left).",
		 c->max_file);
	for (size_t i = 0; i < ARRAY_LEN(tools); i++)
		if (mcp_server_add_tool(s, &tools[i], e))
			return -1;
	return 0;
}
