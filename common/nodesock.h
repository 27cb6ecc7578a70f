/* The node socket's protocol: how a process on a node (cloche-proxy,
 * `cloche-node connect`) asks cloche-node for a connection into one of its
 * sandboxes, or for a desktop's VNC secret.  cloche-node serves it
 * (node-agent/na_connect.c); this header is what both sides agree on.
 *
 * A client connects to the unix socket and sends one line:
 *
 *	CONNECT <id> <port>\n	a TCP connection to <port> inside sandbox <id>
 *	SECRET <id>\n		the sandbox's VNC secret
 *
 * and reads one answer:
 *
 *	OK\n			with the connected socket attached (SCM_RIGHTS)
 *	OK <secret>\n		to SECRET
 *	ERR <status> <message>\n	an HTTP-like status: 400, 403, 404, 409, 502, 504
 *
 * The functions here only format, parse and move the descriptor; who may
 * ask, and what happens in between, belongs to the two sides. */
#ifndef COMMON_NODESOCK_H
#define COMMON_NODESOCK_H

#include <stddef.h>
#include <sys/types.h>

/* Longest line either side sends, '\n' included. */
#define NODESOCK_LINE_MAX 320
/* Room for a sandbox id and its NUL. */
#define NODESOCK_ID_SIZE 40

/* Formats "CONNECT <id> <port>\n" into line.  Its length, or -1 when it does
 * not fit. */
int nodesock_connect_line(char *line, size_t size, const char *id, int port);

enum nodesock_verb { NODESOCK_BAD, NODESOCK_CONNECT, NODESOCK_SECRET };

/* Reads a request line (without its '\n'): the verb, the id (at most
 * NODESOCK_ID_SIZE - 1 characters) and, for CONNECT, the port as written
 * (the caller checks its range).  NODESOCK_BAD for anything else, extra
 * words included. */
enum nodesock_verb nodesock_parse_request(const char *line, char id[NODESOCK_ID_SIZE],
					  int *port);

/* Sends "OK\n" with sock attached.  0, or -1 with errno. */
int nodesock_send_ok(int fd, int sock);

/* Sends "ERR <status> <msg>\n" (msg cut to fit a line); errors are ignored:
 * the peer that went away has no one to tell. */
void nodesock_send_err(int fd, int status, const char *msg);

/* One recvmsg(2) of an answer into buf (NUL-terminated; size - 1 bytes at
 * most), taking a descriptor passed with it as *sock (close-on-exec; -1 when
 * none came).  Returns the bytes read, 0 when the peer closed, -1 with errno
 * (EAGAIN on a non-blocking socket with nothing yet). */
ssize_t nodesock_recv(int fd, char *buf, size_t size, int *sock);

/* Reads an answer line (buf as nodesock_recv left it).  1 for "OK\n";
 * 0 for "ERR <status> <message>" with *status and *msg (pointing into buf,
 * the line's end cut off); -1 for anything else. */
int nodesock_parse_answer(char *buf, int *status, const char **msg);

#endif
