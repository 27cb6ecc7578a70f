/* The agent's side of the control lease; see x11_lease.h. */
#include "x11_lease.h"

#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

socklen_t x11_lease_addr(const char *display, struct sockaddr_un *sa)
{
	const char *dir = getenv("CLOCHE_CONTROL_DIR");
	int n;

	if (!display)
		display = getenv("DISPLAY");
	if (!dir || dir[0] != '/')
		dir = X11_LEASE_DIR;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir,
		     display && *display && !strchr(display, '/') ? display : ":0");
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
}

/* How long the rest of an answer line may take once it has begun. */
#define LINE_REST_MS 5000

int x11_lease_read(int fd, int timeout_ms, json_t **answer, struct err *e)
{
	char line[X11_LEASE_LINE_MAX];
	size_t got = 0;
	uint64_t end = util_now_ms() + (uint64_t)timeout_ms;
	json_error_t je;

	/* Byte by byte up to the newline: the server may send a second line
	 * later on the same connection, which must stay unread.  The timeout
	 * is for the line to begin: once a byte of it is read, returning 0
	 * would lose that byte (the caller reads again, and would start in the
	 * middle of the line), so the rest gets LINE_REST_MS, which the server,
	 * writing the line at once, never needs on a machine that is alive. */
	while (got < sizeof(line) - 1) {
		uint64_t now = util_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;
		int r;

		if (got > 0 && end < now + LINE_REST_MS)
			end = now + LINE_REST_MS;
		if (now >= end)
			return 0;
		r = poll(&p, 1, (int)(end - now));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return err_set(e, errno, "control socket");
		if (r == 0 && got > 0)
			return err_set(e, ETIMEDOUT, "cloche-vnc sent part of an answer");
		if (r == 0)
			return 0;
		n = read(fd, line + got, 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(e, n == 0 ? 0 : errno, "cloche-vnc closed the control connection");
		if (line[got] == '\n')
			break;
		got++;
	}
	line[got] = '\0';
	*answer = json_loads(line, 0, &je);
	if (!*answer)
		return err_set(e, 0, "cloche-vnc's answer is not JSON: %s", je.text);
	return 1;
}

int x11_lease_request(const char *display, json_t *req, int timeout_ms, json_t **answer,
		      struct err *e)
{
	struct sockaddr_un sa;
	socklen_t len = x11_lease_addr(display, &sa);
	AUTOCLOSE int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	AUTOFREE char *line = NULL;
	size_t n, off = 0;
	int r;

	if (fd == -1)
		return err_set(e, errno, "control socket");
	if (len == 0)
		return err_set(e, ENAMETOOLONG, "control socket path");
	if (connect(fd, (struct sockaddr *)&sa, len) == -1) {
		if (errno == ECONNREFUSED || errno == ENOENT)
			return -2;
		return err_set(e, errno, "connect to cloche-vnc's control socket");
	}
	line = json_dumps(req, JSON_COMPACT);
	if (!line)
		return err_set(e, ENOMEM, "control request");
	n = strlen(line);
	line[n] = '\n'; /* over the NUL: written by length */
	while (off <= n) {
		ssize_t w = send(fd, line + off, n + 1 - off, MSG_NOSIGNAL);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return err_set(e, errno, "send to cloche-vnc's control socket");
		off += (size_t)w;
	}
	line[n] = '\0';
	r = x11_lease_read(fd, timeout_ms, answer, e);
	if (r == 0)
		return err_set(e, ETIMEDOUT, "cloche-vnc did not answer");
	if (r < 0)
		return -1;
	return take_fd(&fd);
}

int x11_lease_act(const char *display, const char *tool, struct x11_lease_act *out,
		  struct err *e)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "act", "tool", tool);
	json_t *ans = NULL;
	int fd;

	memset(out, 0, sizeof(*out));
	if (!req)
		return err_set(e, ENOMEM, "control request");
	fd = x11_lease_request(display, req, 2000, &ans, e);
	json_decref(req);
	if (fd < 0)
		return fd;
	if (json_is_true(json_object_get(ans, "ok"))) {
		out->handback = json_incref(json_object_get(ans, "handback"));
		json_decref(ans);
		return fd;
	}
	close(fd);
	out->held = true;
	snprintf(out->since, sizeof(out->since), "%s",
		 json_string_value(json_object_get(ans, "since")) ?: "");
	json_decref(ans);
	return -1;
}
