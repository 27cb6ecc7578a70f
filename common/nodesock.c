/* The node socket's protocol; see nodesock.h. */
#include "common/nodesock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int nodesock_connect_line(char *line, size_t size, const char *id, int port)
{
	int n = snprintf(line, size, "CONNECT %s %d\n", id, port);

	return n < 0 || (size_t)n >= size ? -1 : n;
}

enum nodesock_verb nodesock_parse_request(const char *line, char id[NODESOCK_ID_SIZE],
					  int *port)
{
	char extra;

	/* %39s: NODESOCK_ID_SIZE - 1 */
	if (sscanf(line, "SECRET %39s %c", id, &extra) == 1)
		return NODESOCK_SECRET;
	if (sscanf(line, "CONNECT %39s %d %c", id, port, &extra) == 2)
		return NODESOCK_CONNECT;
	return NODESOCK_BAD;
}

/* The control buffer for one descriptor, aligned for struct cmsghdr. */
union fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

int nodesock_send_ok(int fd, int sock)
{
	char data[] = "OK\n";
	struct iovec iov = {.iov_base = data, .iov_len = 3};
	union fd_cmsg u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	ssize_t n;

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sock, sizeof(int));
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return n == 3 ? 0 : -1;
}

void nodesock_send_err(int fd, int status, const char *msg)
{
	char line[NODESOCK_LINE_MAX];
	int n = snprintf(line, sizeof(line) - 1, "ERR %d %s", status, msg);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)send(fd, line, (size_t)n, MSG_NOSIGNAL);
}

ssize_t nodesock_recv(int fd, char *buf, size_t size, int *sock)
{
	struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
	union fd_cmsg u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	ssize_t n;

	*sock = -1;
	buf[0] = '\0';
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
			if (*sock != -1)
				close(*sock); /* one is all an answer carries */
			memcpy(sock, CMSG_DATA(cm), sizeof(int));
		}
	buf[n] = '\0';
	return n;
}

int nodesock_parse_answer(char *buf, int *status, const char **msg)
{
	char *end;
	long st;

	if (strncmp(buf, "OK\n", 3) == 0)
		return 1;
	buf[strcspn(buf, "\n")] = '\0';
	if (strncmp(buf, "ERR ", 4) != 0)
		return -1;
	errno = 0;
	st = strtol(buf + 4, &end, 10);
	if (errno || end == buf + 4 || st < 100 || st > 599 || *end != ' ' || !end[1])
		return -1;
	*status = (int)st;
	*msg = end + 1;
	return 0;
}
