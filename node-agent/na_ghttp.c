/* HTTP with the servers inside a sandbox (na_ghttp.h).  Both sides are
 * ours, so this speaks only what they answer: a head, then a body of
 * Content-Length bytes. */
#include "node-agent/na_ghttp.h"
#include "node-agent/na_netns.h"

#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

bool na_ghttp_header(const char *head, const char *name, char *out, size_t len)
{
	const char *end = strstr(head, "\r\n\r\n");
	size_t nl = strlen(name);

	for (const char *p = strstr(head, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
		const char *l = p + 2;
		if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
			l += nl + 1;
			l += strspn(l, " \t");
			size_t vl = strcspn(l, "\r\n");
			if (vl == 0 || vl >= len)
				return false;
			memcpy(out, l, vl);
			out[vl] = '\0';
			return true;
		}
	}
	return false;
}

int na_ghttp_connect(const char *id, int port, int connect_ms, int io_s, struct err *e)
{
	struct timeval tv = {io_s, 0};
	struct linger lg = {1, 0};
	int fd = na_netns_connect(id, port, connect_ms, e);

	if (fd == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

int na_ghttp_exchange(int fd, const char *method, const char *path, int port, const char *hdrs,
		      const char *body, size_t max, struct buf *out, const char **bodyp,
		      struct err *e)
{
	char head[1024], chunk[16384], len_s[24];
	const char *blank = NULL;
	size_t head_len = 0, want = 0;
	int n, status = 0;
	ssize_t r;

	n = snprintf(head, sizeof(head),
		     "%s %s HTTP/1.1\r\nHost: 10.0.2.15:%d\r\n%sContent-Length: %zu\r\n\r\n", method,
		     path, port, hdrs, body ? strlen(body) : 0);
	if (n <= 0 || (size_t)n >= sizeof(head) || util_write_all(fd, head, (size_t)n) == -1 ||
	    (body && util_write_all(fd, body, strlen(body)) == -1))
		return err_set(e, errno, "send %s %s to port %d", method, path, port);
	buf_reset(out);
	for (;;) {
		if (blank && out->len >= head_len + want)
			break;
		r = read(fd, chunk, sizeof(chunk));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return err_set(e, errno, "read the answer to %s %s", method, path);
		if (r == 0)
			return err_set(e, 0, "port %d closed the connection mid-answer", port);
		if (buf_append(out, chunk, (size_t)r, e) == -1)
			return -1;
		if (!blank && (blank = strstr(buf_str(out), "\r\n\r\n"))) {
			head_len = (size_t)(blank - out->data) + 4;
			if (sscanf(out->data, "HTTP/%*d.%*d %d", &status) != 1)
				return err_set(e, 0, "port %d answered no HTTP", port);
			if (na_ghttp_header(out->data, "Content-Length", len_s, sizeof(len_s)))
				want = strtoul(len_s, NULL, 10);
			else if (na_ghttp_header(out->data, "Transfer-Encoding", len_s, sizeof(len_s)))
				return err_set(e, 0, "port %d answered a stream, not one body", port);
			if (want > max)
				return err_set(e, 0, "port %d's answer is too large", port);
		}
	}
	*bodyp = out->data + head_len;
	return status;
}
