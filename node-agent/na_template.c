/* Templates of the pool: read-only templates/name@digest subvolumes.
 * Resolving a name to its newest version, listing them, and importing one
 * from a btrfs send stream (see docs/node.md, Templates). */
#include "node-agent/na_node.h"
#include "node-agent/na_btrfs.h"

#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

bool na_valid_template(const char *t)
{
	if (!*t || *t == '.' || strlen(t) > 200)
		return false;
	for (; *t; t++) {
		char c = *t;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.' || c == '@'))
			return false;
	}
	return true;
}


/* Resolves a template name to name@digest: an exact name@digest, or the
 * newest (by mtime) read-only subvolume templates/<name>@*.  Writes the
 * resolved name into out.  0 or -1 with 404. */
int na_resolve_template(const struct na_node *n, const char *name, char *out, size_t len,
			    struct err *e)
{
	char dir[1100], path[1400];
	DIR *d;
	struct dirent *de;
	size_t nl = strlen(name);
	time_t best = 0;
	struct stat st;

	if (!na_valid_template(name))
		return err_http(e, 400, "`template`: `%s` is not a template name", name);
	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	if (strchr(name, '@')) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (!na_btrfs_is_readonly(path))
			return err_http(e, 404, "no template `%s`", name);
		snprintf(out, len, "%s", name);
		return 0;
	}
	d = opendir(dir);
	if (!d)
		return err_http(e, 404, "no template `%s` (%s: %s)", name, dir, strerror(errno));
	out[0] = '\0';
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, name, nl) != 0 || de->d_name[nl] != '@')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_readonly(path) || stat(path, &st) == -1)
			continue;
		if (!out[0] || st.st_mtime > best) {
			best = st.st_mtime;
			snprintf(out, len, "%s", de->d_name);
		}
	}
	closedir(d);
	if (!out[0])
		return err_http(e, 404, "no template `%s`", name);
	return 0;
}

json_t *na_node_templates_json(struct na_node *n)
{
	char dir[1100], path[1400], when[40];
	json_t *arr = json_array();
	DIR *d;
	struct dirent *de;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	d = opendir(dir);
	while (d && arr && (de = readdir(d)) != NULL) {
		const char *at = strchr(de->d_name, '@');
		int users = 0;
		struct tm tm;

		if (de->d_name[0] == '.' || !at || !na_valid_template(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_readonly(path) || stat(path, &st) == -1)
			continue;
		gmtime_r(&st.st_mtime, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		pthread_mutex_lock(&n->mu);
		for (struct na_sb *s = n->list; s; s = s->next)
			users += strcmp(s->template, de->d_name) == 0;
		pthread_mutex_unlock(&n->mu);
		json_array_append_new(arr, json_pack("{s:s, s:s%, s:s, s:s, s:i}", "template",
						     de->d_name, "name", de->d_name,
						     (int)(at - de->d_name), "digest", at + 1,
						     "created_at", when, "sandboxes", users));
	}
	if (d)
		closedir(d);
	return json_pack("{s:o}", "templates", arr);
}

/* Claims name for this import (n->importing).  0, or -1 with 409 when an
 * import of it runs already, 503 when too many run at once. */
static int claim_import(struct na_node *n, const char *name, struct err *e)
{
	int free_slot = -1, rc = 0;

	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < NA_IMPORTS_MAX; i++) {
		if (strcmp(n->importing[i], name) == 0) {
			rc = err_http(e, 409, "template `%s` is being imported already", name);
			break;
		}
		if (!n->importing[i][0] && free_slot < 0)
			free_slot = i;
	}
	if (rc == 0 && free_slot < 0)
		rc = err_http(e, 503, "%d template imports run already; try again later",
			      NA_IMPORTS_MAX);
	if (rc == 0)
		snprintf(n->importing[free_slot], sizeof(n->importing[free_slot]), "%s", name);
	pthread_mutex_unlock(&n->mu);
	return rc;
}

static void release_import(struct na_node *n, const char *name)
{
	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < NA_IMPORTS_MAX; i++)
		if (strcmp(n->importing[i], name) == 0)
			n->importing[i][0] = '\0';
	pthread_mutex_unlock(&n->mu);
}

int na_node_import_template(struct na_node *n, const char *file, char *name_out, size_t len,
			    struct err *e)
{
	char name[256], dir[1100], path[1400];
	AUTOCLOSE int fd = -1;
	struct stat st;
	int rc = -1;

	if (file[0] == '/')
		fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return err_http(e, 400, "`import`: `%s` is not a readable file (absolute path)",
				file);
	/* The whole stream is checked before anything is received, and the
	 * receive reads the same open file: a stream that carries a second
	 * subvolume (which would arrive unchecked, read-only, as a template)
	 * never reaches btrfs. */
	if (na_btrfs_stream_check(fd, name, sizeof(name), e) == -1) {
		err_wrap(e, "`%s`", file);
		e->http_status = 400;
		return -1;
	}
	if (!na_valid_template(name) || !strchr(name, '@') || name[0] == '@')
		return err_http(e, 400, "the stream holds `%s`, not a template (name@digest)", name);
	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* From here this import owns the name: whatever is at path when it
	 * fails is its own work, never another import's. */
	if (claim_import(n, name, e) == -1)
		return -1;
	if (lstat(path, &st) == 0) {
		err_http(e, 409, "template `%s` already exists", name);
		goto out;
	}
	/* Received in place: until the stream is complete the subvolume is
	 * writable, and writable subvolumes are not templates to creates.  (A
	 * read-only subvolume cannot be moved between directories, so there is
	 * no receiving elsewhere and renaming.) */
	if (na_btrfs_receive(fd, dir, e) == -1 || !na_btrfs_is_readonly(path)) {
		if (!e->msg[0])
			err_set(e, 0, "`%s` did not arrive as a read-only subvolume", name);
		/* Only a writable one is a half-received import of ours; a
		 * read-only one there was made by something else meanwhile
		 * (receive then failed with "exists") and stays. */
		if (!na_btrfs_is_readonly(path) && na_btrfs_delete(path, NULL) == -1 &&
		    lstat(path, &st) == 0)
			log_error("cannot remove a failed import", "{s:s}", "path", path);
		e->http_status = 400;
		goto out;
	}
	snprintf(name_out, len, "%s", name);
	log_info("template imported", "{s:s, s:s}", "template", name, "from", file);
	rc = 0;
out:
	release_import(n, name);
	return rc;
}

/* Removes what an import interrupted by a crash left: a name@digest
 * subvolume in templates/ that never became read-only. */
void na_sweep_imports(struct na_node *n)
{
	char dir[1100], path[1400];
	DIR *d;
	struct dirent *de;
	struct err e = ERR_INIT;

	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !strchr(de->d_name, '@'))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_subvolume(path) || na_btrfs_is_readonly(path))
			continue;
		log_warn("removing an unfinished template import", "{s:s}", "template", de->d_name);
		if (na_btrfs_delete(path, &e) == -1)
			log_error("cannot remove it", "{s:s, s:s}", "template", de->d_name, "error",
				  e.msg);
	}
	if (d)
		closedir(d);
}
