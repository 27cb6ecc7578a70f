/* OCI config.json for a sandbox: the same document `runsc spec` plus the
 * edits of docs/sandbox.md would give, built directly so no runsc call and no
 * jq are needed on the create path, plus the resource limits of the request. */
#include "node-agent/na_spec.h"
#include "node-agent/na_netns.h"

#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NA_CPU_PERIOD 100000

int na_json_save(const char *path, const json_t *v, struct err *e)
{
	char tmp[4096];
	AUTOFREE char *text = json_dumps(v, JSON_INDENT(2));
	AUTOCLOSE int fd = -1;

	if (!text)
		return err_set(e, ENOMEM, "write `%s`", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		return err_set(e, errno, "open `%s`", tmp);
	/* No fsync: the rename makes the file whole or absent for a crash of the
	 * agent (the page cache outlives it), and what these files describe, a
	 * running sandbox, does not outlive a crash of the machine: after a
	 * reboot its container and netns are gone and the next start removes
	 * it.  An fsync here cost a claim up to 10 ms while btrfs committed a
	 * snapshot beside it. */
	if (util_write_all(fd, text, strlen(text)) == -1 || util_write_all(fd, "\n", 1) == -1) {
		err_set(e, errno, "write `%s`", tmp);
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) == -1) {
		err_set(e, errno, "rename `%s`", tmp);
		unlink(tmp);
		return -1;
	}
	return 0;
}

const struct na_desk na_desk_default = {.clipboard = true, .resize = false};

json_t *na_desk_json(const struct na_desk *d, bool stored)
{
	json_t *j = json_pack("{s:b, s:b}", "clipboard", d->clipboard, "resize", d->resize);

	if (j && stored)
		json_object_set_new(j, "rec_secret", json_string(d->rec_secret));
	return j;
}

int na_desk_parse(const json_t *v, bool stored, struct na_desk *d, struct err *e)
{
	const char *k;
	json_t *x;

	d->clipboard = na_desk_default.clipboard;
	d->resize = na_desk_default.resize;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return err_http(e, 400, "`desktop` must be an object like {\"clipboard\": true, "
				"\"resize\": false}");
	json_object_foreach((json_t *)v, k, x) {
		if (stored && strcmp(k, "rec_secret") == 0 && json_is_string(x)) {
			snprintf(d->rec_secret, sizeof(d->rec_secret), "%s", json_string_value(x));
			continue;
		}
		bool *slot = strcmp(k, "clipboard") == 0 ? &d->clipboard
			     : strcmp(k, "resize") == 0  ? &d->resize
							 : NULL;
		if (!slot)
			return err_http(e, 400, "`desktop.%.40s` is not a desktop switch (clipboard, "
					"resize)", k);
		if (!json_is_boolean(x))
			return err_http(e, 400, "`desktop.%s` must be true or false", k);
		*slot = json_is_true(x);
	}
	return 0;
}

long long na_spec_reserve_mb(long long memory_mb)
{
	return 192 + memory_mb / 8;
}

long long na_spec_host_pids(long long pids)
{
	return 8 * pids + 1024;
}

static json_t *caps(void)
{
	return json_pack("[s,s,s,s,s,s,s,s]", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
			 "CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_NET_BIND_SERVICE",
			 "CAP_AUDIT_WRITE");
}

static json_t *tmpfs(const char *dst, const char *mode)
{
	return json_pack("{s:s, s:s, s:s, s:[s,s,s]}", "destination", dst, "type", "tmpfs",
			 "source", "tmpfs", "options", "nosuid", "nodev", mode);
}

int na_spec_write(const char *bundle_dir, const char *id, const char *rootfs,
		  const struct na_limits *lim, const char *vnc_secret, const char *proxy_domain,
		  const struct na_desk *desk, struct err *e)
{
	char ns[128], envid[96], envres[64], envvnc[128], envhosts[300], path[4096];
	char envclip[32], envresize[32], envrec[96];
	long long reserve = na_spec_reserve_mb(lim->memory_mb);
	AUTOJSON json_t *spec = NULL;
	long long quota = (long long)(lim->cpus * NA_CPU_PERIOD);

	na_netns_path(id, 'S', ns, sizeof(ns));
	snprintf(envid, sizeof(envid), "CLOCHE_SANDBOX_ID=%s", id);
	snprintf(envres, sizeof(envres), "CLOCHE_MEMORY_RESERVE_MB=%lld", reserve);
	/* Read by cloche-init as root and handed to cloche-vnc only. */
	snprintf(envvnc, sizeof(envvnc), "CLOCHE_VNC_SECRET=%s", vnc_secret ? vnc_secret : "");
	snprintf(envhosts, sizeof(envhosts), "CLOCHE_PROXY_HOSTS=%s%.256s",
		 proxy_domain && *proxy_domain ? "*." : "", proxy_domain ? proxy_domain : "");
	if (!desk)
		desk = &na_desk_default;
	snprintf(envclip, sizeof(envclip), "CLOCHE_CLIPBOARD=%s", desk->clipboard ? "on" : "off");
	snprintf(envresize, sizeof(envresize), "CLOCHE_VNC_RESIZE=%s", desk->resize ? "on" : "off");
	/* Read by cloche-init as root and handed to cloche-rec only. */
	snprintf(envrec, sizeof(envrec), "CLOCHE_REC_SECRET=%s", desk->rec_secret);
	if (quota < 1000)
		quota = 1000;
	spec = json_pack(
		"{s:s, s:{s:s, s:b}, s:s,"
		" s:{s:b, s:{s:i, s:i}, s:[s], s:s, s:[s,s,s,s,s,s,s,s,s,s],"
		"    s:{s:o, s:o, s:o}, s:[{s:s, s:i, s:i}, {s:s, s:I, s:I}], s:b},"
		" s:[{s:s,s:s,s:s}, {s:s,s:s,s:s}, {s:s,s:s,s:s,s:[s,s,s,s]}, o, o, o],"
		" s:{s:[{s:s},{s:s,s:s},{s:s},{s:s},{s:s}],"
		"    s:{s:{s:I}, s:{s:I, s:I}, s:{s:I}}}}",
		"ociVersion", "1.0.0",
		"root", "path", rootfs, "readonly", 0,
		"hostname", "sandbox",
		"process", "terminal", 0, "user", "uid", 0, "gid", 0,
		"args", "/opt/cloche/bin/cloche-init", "cwd", "/",
		"env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", envid,
		envres, envvnc, envhosts, "SCREEN_WIDTH=1280", "SCREEN_HEIGHT=800", envclip, envresize,
		envrec,
		"capabilities", "bounding", caps(), "effective", caps(), "permitted", caps(),
		"rlimits", "type", "RLIMIT_NOFILE", "hard", 1024, "soft", 1024,
		"type", "RLIMIT_NPROC", "hard", (json_int_t)lim->pids, "soft", (json_int_t)lim->pids,
		"noNewPrivileges", 0,
		"mounts", "destination", "/proc", "type", "proc", "source", "proc",
		"destination", "/dev", "type", "tmpfs", "source", "tmpfs",
		"destination", "/sys", "type", "sysfs", "source", "sysfs", "options", "nosuid",
		"noexec", "nodev", "ro",
		tmpfs("/tmp", "mode=1777"), tmpfs("/run", "mode=755"), tmpfs("/dev/shm", "mode=1777"),
		"linux", "namespaces", "type", "pid", "type", "network", "path", ns, "type", "ipc",
		"type", "uts", "type", "mount",
		"resources", "memory", "limit", (json_int_t)((lim->memory_mb + reserve) << 20),
		"cpu", "quota", (json_int_t)quota, "period", (json_int_t)NA_CPU_PERIOD,
		"pids", "limit", (json_int_t)na_spec_host_pids(lim->pids));
	if (!spec)
		return err_set(e, ENOMEM, "build OCI spec for %s", id);
	snprintf(path, sizeof(path), "%s/config.json", bundle_dir);
	return na_json_save(path, spec, e);
}
