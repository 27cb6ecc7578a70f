/* Unit tests for the egress engine on loopback: the answers to refused
 * requests, the connection limit, detach, attach/set_policy errors and the
 * log line.  The allowed path needs an upstream at a public-looking address
 * that is not on an interface: the "relay" tests make one in a network
 * namespace of their own (root, forked tests: `ip route add local
 * 198.51.100.0/24 dev lo` accepts that range without putting it on lo). */
#include "node-agent/na_egress.h"
#include "tests/unit/node/suites.h"

#include "common/log.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ID "sb-test"

/* A listening TCP socket on addr:port (0: any); *port gets the port. */
static int listener_at(const char *addr, int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port)};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, addr, &sa.sin_addr);
	ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", addr,
		      strerror(errno));
	ck_assert_int_eq(listen(fd, 512), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int client(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 30};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Reads until EOF (or until the text holds `until` when not NULL).  The
 * caller frees. */
static char *read_all(int fd, const char *until)
{
	size_t cap = 65536, len = 0;
	char *b = malloc(cap + 1);
	ssize_t n;

	ck_assert_ptr_nonnull(b);
	b[0] = '\0';
	while (len < cap && (!until || !strstr(b, until))) {
		n = recv(fd, b + len, cap - len, 0);
		ck_assert_msg(n >= 0, "recv: %s", strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
		b[len] = '\0';
	}
	return b;
}

static char *exchange(int port, const char *req, size_t len)
{
	AUTOCLOSE int fd = client(port);

	ck_assert_int_eq(util_write_all(fd, req, len), 0);
	return read_all(fd, NULL);
}

/* Checks an error answer: exact status line and headers, a body of
 * Content-Length bytes saying "cloche egress: ...needle...\n". */
static void check_answer(const char *resp, const char *status_line, const char *needle)
{
	char want[256];
	const char *body;
	int clen = -1;

	snprintf(want, sizeof(want), "%s\r\nContent-Type: text/plain\r\nContent-Length: ",
		 status_line);
	ck_assert_msg(strncmp(resp, want, strlen(want)) == 0, "answer: `%s`", resp);
	ck_assert_int_eq(sscanf(resp + strlen(want), "%d", &clen), 1);
	body = strstr(resp, "\r\nConnection: close\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	body += strlen("\r\nConnection: close\r\n\r\n");
	ck_assert_int_eq((int)strlen(body), clen);
	ck_assert_msg(strncmp(body, "cloche egress: ", 15) == 0, "%s", body);
	ck_assert_int_eq(body[clen - 1], '\n');
	ck_assert_msg(strstr(body, needle) != NULL, "`%s` lacks `%s`", body, needle);
}

static void policy(const char *text, struct na_egress_policy *p)
{
	struct err e = ERR_INIT;
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);

	ck_assert_ptr_nonnull(v);
	ck_assert_msg(na_egress_policy_parse(v, p, &e) == 0, "%s", e.msg);
	json_decref(v);
}

/* An engine serving ID on 127.0.0.1 with the policy text; *port: where. */
static struct na_egress *start(const char *pol, int *port)
{
	struct err e = ERR_INIT;
	struct na_egress_policy p;
	struct na_egress *eg = na_egress_new(&e);
	int fd;

	ck_assert_msg(eg != NULL, "%s", e.msg);
	policy(pol, &p);
	*port = 0;
	fd = listener_at("127.0.0.1", port);
	ck_assert_msg(na_egress_attach(eg, ID, fd, &p, &e) == 0, "%s", e.msg);
	return eg;
}

static void wait_conns(struct na_egress *eg, const char *id, int n)
{
	uint64_t end = util_now_ms() + 10000;

	while (na_egress_connections(eg, id) != n && util_now_ms() < end)
		usleep(10000);
	ck_assert_int_eq(na_egress_connections(eg, id), n);
}

static void answer_is(int port, const char *req, const char *status_line, const char *needle)
{
	AUTOFREE char *resp = exchange(port, req, strlen(req));

	check_answer(resp, status_line, needle);
}

START_TEST(refuses_names_not_allowed)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);

	answer_is(port, "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n",
		  "HTTP/1.1 403 Forbidden", "example.org:443 is not in this sandbox's allowlist");
	/* The name is allowed, the port is not (a bare name means 80 and 443). */
	answer_is(port, "CONNECT example.com:22 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "not in this sandbox's allowlist");
	answer_is(port, "GET http://sub.example.com/ HTTP/1.1\r\nHost: sub.example.com\r\n\r\n",
		  "HTTP/1.1 403 Forbidden", "sub.example.com:80 is not");
	wait_conns(eg, ID, 0);
	na_egress_free(eg);
}
END_TEST

START_TEST(refuses_private_resolutions)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"localhost:*\",\"127.0.0.1:*\",\"[::1]:*\","
				     "\"169.254.169.254\"]}",
				     &port);

	answer_is(port, "CONNECT localhost:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "localhost resolves to a private/link-local/node address");
	answer_is(port, "CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "resolves to a private/link-local/node address");
	answer_is(port, "CONNECT [::1]:22 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "resolves to a private/link-local/node address");
	answer_is(port, "GET http://169.254.169.254/latest/meta-data HTTP/1.1\r\n\r\n",
		  "HTTP/1.1 403 Forbidden", "resolves to a private/link-local/node address");
	na_egress_free(eg);
}
END_TEST

START_TEST(refuses_malformed)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);
	static const char tls[] = "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03";
	AUTOFREE char *resp = exchange(port, tls, sizeof(tls) - 1);

	check_answer(resp, "HTTP/1.1 400 Bad Request", "control character");
	answer_is(port, "HELLO\r\n\r\n", "HTTP/1.1 400 Bad Request", "malformed request line");
	answer_is(port, "GET https://example.com/ HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request",
		  "https:// URLs go through CONNECT");
	answer_is(port, "GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n",
		  "HTTP/1.1 400 Bad Request", "not a proxy request");
	na_egress_free(eg);
}
END_TEST

START_TEST(refuses_oversized_head)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);
	size_t n = NA_EGRESS_MAX_HEAD + 10;
	AUTOFREE char *req = malloc(n);
	AUTOFREE char *resp = NULL;

	ck_assert_ptr_nonnull(req);
	memcpy(req, "GET http://example.com/ HTTP/1.1\r\nX: ", 37);
	memset(req + 37, 'x', n - 37);
	resp = exchange(port, req, n);
	check_answer(resp, "HTTP/1.1 431 Request Header Fields Too Large", "exceeds 8192");
	na_egress_free(eg);
}
END_TEST

START_TEST(unresolvable_is_502)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"*.invalid:*\"]}", &port);

	answer_is(port, "CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n",
		  "HTTP/1.1 502 Bad Gateway", "cannot resolve no-such-host.invalid");
	na_egress_free(eg);
}
END_TEST

START_TEST(detach_closes_open_connections)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);
	AUTOCLOSE int a = client(port);
	AUTOCLOSE int b = client(port);
	char c;

	/* b has sent half a head. */
	ck_assert_int_eq(util_write_all(b, "CONNECT exa", 11), 0);
	wait_conns(eg, ID, 2);
	na_egress_detach(eg, ID);
	ck_assert_int_eq(na_egress_connections(eg, ID), 0);
	/* Cut by a reset, not a FIN: the sandbox keeps no half-closed end
	 * that would refuse a checkpoint. */
	ck_assert_int_eq(recv(a, &c, 1, 0), -1);
	ck_assert_int_eq(errno, ECONNRESET);
	ck_assert_int_le(recv(b, &c, 1, 0), 0);
	/* The listener is closed: nobody answers there any more. */
	{
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		AUTOCLOSE int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), -1);
		ck_assert_int_eq(errno, ECONNREFUSED);
	}
	/* Detaching again, or an unknown id, is a no-op. */
	na_egress_detach(eg, ID);
	na_egress_detach(eg, "sb-unknown");
	na_egress_free(eg);
}
END_TEST

START_TEST(attach_twice_fails)
{
	int port, port2 = 0, fd2, fd3;
	struct na_egress *eg = start("\"none\"", &port);
	struct na_egress_policy p = {0};
	struct err e = ERR_INIT;

	fd2 = listener_at("127.0.0.1", &port2);
	ck_assert_int_eq(na_egress_attach(eg, ID, fd2, &p, &e), -1);
	ck_assert_int_eq(e.http_status, 409);
	ck_assert_msg(strstr(e.msg, "already attached") != NULL, "%s", e.msg);
	/* The second listener was closed all the same. */
	ck_assert_int_eq(fcntl(fd2, F_GETFD), -1);
	ck_assert_int_eq(errno, EBADF);
	/* Another id is fine, and both serve. */
	port2 = 0;
	fd3 = listener_at("127.0.0.1", &port2);
	ck_assert_msg(na_egress_attach(eg, "sb-other", fd3, &p, &e) == 0, "%s", e.msg);
	answer_is(port2, "CONNECT example.com:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "not in this sandbox's allowlist");
	answer_is(port, "CONNECT example.com:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "not in this sandbox's allowlist");
	na_egress_free(eg);
}
END_TEST

START_TEST(set_policy_applies_and_404s)
{
	int port;
	struct na_egress *eg = start("\"none\"", &port);
	struct na_egress_policy p;
	struct err e = ERR_INIT;

	answer_is(port, "CONNECT localhost:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "not in this sandbox's allowlist");
	policy("{\"allow\":[\"localhost\"]}", &p);
	ck_assert_msg(na_egress_set_policy(eg, ID, &p, &e) == 0, "%s", e.msg);
	answer_is(port, "CONNECT localhost:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden",
		  "resolves to a private");
	ck_assert_int_eq(na_egress_set_policy(eg, "sb-unknown", &p, &e), -1);
	ck_assert_int_eq(e.http_status, 404);
	ck_assert_int_eq(na_egress_connections(eg, "sb-unknown"), 0);
	na_egress_free(eg);
}
END_TEST

START_TEST(limits_connections_per_sandbox)
{
	int port, i;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);
	int fds[NA_EGRESS_MAX_CONNS];
	AUTOFREE char *resp = NULL;

	for (i = 0; i < NA_EGRESS_MAX_CONNS; i++)
		fds[i] = client(port);
	wait_conns(eg, ID, NA_EGRESS_MAX_CONNS);
	/* The 257th is answered at once, before it says anything. */
	{
		AUTOCLOSE int extra = client(port);

		resp = read_all(extra, NULL);
	}
	check_answer(resp, "HTTP/1.1 503 Service Unavailable", "too many connections");
	ck_assert_int_eq(na_egress_connections(eg, ID), NA_EGRESS_MAX_CONNS);
	for (i = 0; i < NA_EGRESS_MAX_CONNS; i++)
		close(fds[i]);
	wait_conns(eg, ID, 0);
	na_egress_free(eg);
}
END_TEST

START_TEST(logs_one_line_per_connection)
{
	int port;
	struct na_egress *eg = start("{\"allow\":[\"example.com\"]}", &port);
	char path[] = "/tmp/unit-egress-log-XXXXXX";
	int fd = mkstemp(path);
	char text[4096];
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	log_init("unit-node", LOG_INFO, fd);
	answer_is(port, "CONNECT evil.example:443 HTTP/1.1\r\nX-Secret: body\r\n\r\n",
		  "HTTP/1.1 403 Forbidden", "not in");
	na_egress_free(eg);
	log_init("unit-node", LOG_WARN, 2);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	ck_assert_msg(strstr(text, "\"msg\":\"egress\"") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"id\":\"" ID "\"") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"host\":\"evil.example\"") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"port\":443") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"verdict\":\"denied\"") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"status\":403") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\"ms\":") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "X-Secret") == NULL, "%s", text);
	ck_assert_ptr_eq(strchr(text, '\n'), text + n - 1); /* one line */
}
END_TEST

/* ---- relays, in a network namespace of their own ---- */

#define UP_ADDR "198.51.100.7"

/* Moves the test process into a fresh netns where UP_ADDR is local but not
 * on any interface.  False (the test skips) when that is not possible. */
static bool private_net(const char *test)
{
	if ((getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0) ||
	    unshare(CLONE_NEWNET) == -1 ||
	    system("ip link set lo up && ip route add local 198.51.100.0/24 dev lo") != 0) {
		fprintf(stderr, "# %s skipped: needs root and a netns of its own\n", test);
		return false;
	}
	return true;
}

enum up_mode { UP_ECHO_AT_EOF, UP_HTTP, UP_HOLD };

struct upstream {
	int lfd, port;
	enum up_mode mode;
	char got[16384];
	size_t len;
	bool saw_eof;
	pthread_t th;
};

static void *upstream_thread(void *arg)
{
	struct upstream *u = arg;
	int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
	char out[16400];
	ssize_t n;

	if (fd == -1)
		return NULL;
	for (;;) {
		n = recv(fd, u->got + u->len, sizeof(u->got) - 1 - u->len, 0);
		if (n <= 0) {
			u->saw_eof = n == 0;
			break;
		}
		if (u->mode == UP_HOLD && u->len == 0)
			util_write_all(fd, "hi", 2); /* the tunnel works both ways */
		u->len += (size_t)n;
		u->got[u->len] = '\0';
		if (u->mode == UP_HTTP && strstr(u->got, "\r\n\r\n"))
			break;
	}
	if (u->mode == UP_ECHO_AT_EOF) {
		n = snprintf(out, sizeof(out), "echo:%s", u->got);
		util_write_all(fd, out, (size_t)n);
	} else if (u->mode == UP_HTTP) {
		util_write_all(fd, ok, sizeof(ok) - 1);
	}
	close(fd);
	return NULL;
}

static void upstream_start(struct upstream *u, enum up_mode mode)
{
	memset(u, 0, sizeof(*u));
	u->mode = mode;
	u->port = 0;
	u->lfd = listener_at(UP_ADDR, &u->port);
	{
		struct sockaddr_in sa = {.sin_family = AF_INET};

		inet_pton(AF_INET, UP_ADDR, &sa.sin_addr);
		ck_assert(!na_egress_addr_forbidden((struct sockaddr *)&sa, sizeof(sa)));
	}
	ck_assert_int_eq(pthread_create(&u->th, NULL, upstream_thread, u), 0);
}

static void upstream_join(struct upstream *u)
{
	pthread_join(u->th, NULL);
	close(u->lfd);
}

START_TEST(relays_connect_tunnel)
{
	struct upstream u;
	struct na_egress *eg;
	int port;
	char req[256];
	AUTOCLOSE int fd = -1;
	AUTOFREE char *first = NULL;
	AUTOFREE char *rest = NULL;

	if (!private_net("relays_connect_tunnel"))
		return;
	upstream_start(&u, UP_ECHO_AT_EOF);
	eg = start("{\"allow\":[\"" UP_ADDR ":*\"]}", &port);
	fd = client(port);
	snprintf(req, sizeof(req), "CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\nearly", UP_ADDR,
		 u.port);
	ck_assert_int_eq(util_write_all(fd, req, strlen(req)), 0);
	first = read_all(fd, "\r\n\r\n");
	ck_assert_str_eq(first, "HTTP/1.1 200 Connection established\r\n\r\n");
	wait_conns(eg, ID, 1);
	ck_assert_int_eq(util_write_all(fd, " late", 5), 0);
	/* Half-close: the upstream sees EOF and still answers. */
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	rest = read_all(fd, NULL);
	ck_assert_str_eq(rest, "echo:early late");
	upstream_join(&u);
	ck_assert(u.saw_eof);
	ck_assert_str_eq(u.got, "early late");
	wait_conns(eg, ID, 0);
	na_egress_free(eg);
}
END_TEST

START_TEST(relays_plain_http)
{
	struct upstream u;
	struct na_egress *eg;
	int port;
	char req[512], want[512];
	AUTOFREE char *resp = NULL;

	if (!private_net("relays_plain_http"))
		return;
	upstream_start(&u, UP_HTTP);
	eg = start("{\"allow\":[\"" UP_ADDR ":*\"]}", &port);
	snprintf(req, sizeof(req),
		 "GET http://%s:%d/p?q=1 HTTP/1.1\r\nHost: wrong\r\nProxy-Connection: keep-alive\r\n"
		 "Proxy-Authorization: Basic eDp5\r\nUser-Agent: t/1\r\nConnection: keep-alive\r\n"
		 "Accept: */*\r\n\r\n",
		 UP_ADDR, u.port);
	resp = exchange(port, req, strlen(req));
	ck_assert_str_eq(resp, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
	upstream_join(&u);
	snprintf(want, sizeof(want),
		 "GET /p?q=1 HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: t/1\r\nAccept: */*\r\n"
		 "Connection: close\r\n\r\n",
		 UP_ADDR, u.port);
	ck_assert_str_eq(u.got, want);
	na_egress_free(eg);
}
END_TEST

START_TEST(connect_refused_is_502)
{
	struct na_egress *eg;
	int port;

	if (!private_net("connect_refused_is_502"))
		return;
	eg = start("{\"allow\":[\"" UP_ADDR ":*\"]}", &port);
	answer_is(port, "CONNECT " UP_ADDR ":9 HTTP/1.1\r\n\r\n", "HTTP/1.1 502 Bad Gateway",
		  "connect to " UP_ADDR " (" UP_ADDR ":9): Connection refused");
	na_egress_free(eg);
}
END_TEST

START_TEST(detach_ends_tunnels)
{
	struct upstream u;
	struct na_egress *eg;
	int port;
	char req[256], c;
	AUTOCLOSE int fd = -1;
	AUTOFREE char *first = NULL;

	if (!private_net("detach_ends_tunnels"))
		return;
	upstream_start(&u, UP_HOLD);
	eg = start("{\"allow\":[\"" UP_ADDR ":*\"]}", &port);
	fd = client(port);
	snprintf(req, sizeof(req), "CONNECT %s:%d HTTP/1.1\r\n\r\nhello", UP_ADDR, u.port);
	ck_assert_int_eq(util_write_all(fd, req, strlen(req)), 0);
	/* The answer, then the upstream's "hi" (possibly in the same read). */
	first = read_all(fd, "\r\n\r\nhi");
	ck_assert_str_eq(first, "HTTP/1.1 200 Connection established\r\n\r\nhi");
	ck_assert_int_eq(na_egress_connections(eg, ID), 1);
	na_egress_detach(eg, ID);
	ck_assert_int_eq(na_egress_connections(eg, ID), 0);
	/* The sandbox's side ends with a reset (na_egress_detach); the relay
	 * may have passed the upstream's FIN on first, so EOF is fine too. */
	{
		ssize_t r = recv(fd, &c, 1, 0);
		ck_assert_msg(r == 0 || (r == -1 && errno == ECONNRESET),
			      "recv after detach: %zd (%s)", r, strerror(errno));
	}
	upstream_join(&u);
	ck_assert(u.saw_eof);
	ck_assert_str_eq(u.got, "hello");
	na_egress_free(eg);
}
END_TEST

Suite *suite_node_egress_engine(void)
{
	Suite *s = suite_create("egress_engine");
	TCase *tc = tcase_create("loopback");
	TCase *tr = tcase_create("relay");

	log_init("unit-node", LOG_WARN, 2);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, refuses_names_not_allowed);
	tcase_add_test(tc, refuses_private_resolutions);
	tcase_add_test(tc, refuses_malformed);
	tcase_add_test(tc, refuses_oversized_head);
	tcase_add_test(tc, unresolvable_is_502);
	tcase_add_test(tc, detach_closes_open_connections);
	tcase_add_test(tc, attach_twice_fails);
	tcase_add_test(tc, set_policy_applies_and_404s);
	tcase_add_test(tc, limits_connections_per_sandbox);
	tcase_add_test(tc, logs_one_line_per_connection);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tr, 60);
	tcase_add_test(tr, relays_connect_tunnel);
	tcase_add_test(tr, relays_plain_http);
	tcase_add_test(tr, connect_refused_is_502);
	tcase_add_test(tr, detach_ends_tunnels);
	suite_add_tcase(s, tr);
	return s;
}
