/* Unit tests for common/nodesock: request lines read and refused (extra
 * words, a missing port, an id too long), answers read and refused, a
 * descriptor carried over a real unix socket pair and usable on the other
 * side, an answer with none, and an error message too long for one line. */
#include "common/nodesock.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct {
	const char *line;
	enum nodesock_verb verb;
	const char *id;
	int port;
} reqs[] = {
	{"CONNECT sb-1 8080", NODESOCK_CONNECT, "sb-1", 8080},
	{"CONNECT sb-1 0", NODESOCK_CONNECT, "sb-1", 0}, /* the range is the caller's */
	{"SECRET sb-2", NODESOCK_SECRET, "sb-2", -1},
	{"CONNECT sb-1", NODESOCK_BAD, NULL, 0},
	{"CONNECT sb-1 80 extra", NODESOCK_BAD, NULL, 0},
	{"SECRET sb-2 extra", NODESOCK_BAD, NULL, 0},
	{"SECRET", NODESOCK_BAD, NULL, 0},
	{"connect sb-1 80", NODESOCK_BAD, NULL, 0},
	{"GET / HTTP/1.1", NODESOCK_BAD, NULL, 0},
	{"", NODESOCK_BAD, NULL, 0},
	/* 40 characters: one more than an id may have */
	{"CONNECT aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 80", NODESOCK_BAD, NULL, 0},
};

START_TEST(parse_request_table)
{
	char id[NODESOCK_ID_SIZE] = "";
	int port = -1;

	ck_assert_int_eq(nodesock_parse_request(reqs[_i].line, id, &port), reqs[_i].verb);
	if (reqs[_i].id) {
		ck_assert_str_eq(id, reqs[_i].id);
		ck_assert_int_eq(port, reqs[_i].port);
	}
}
END_TEST

START_TEST(connect_line)
{
	char line[NODESOCK_LINE_MAX], small[12];

	ck_assert_int_eq(nodesock_connect_line(line, sizeof(line), "sb-1", 5900), 18);
	ck_assert_str_eq(line, "CONNECT sb-1 5900\n");
	ck_assert_int_eq(nodesock_connect_line(small, sizeof(small), "sb-1", 5900), -1);
}
END_TEST

static const struct {
	const char *answer;
	int want, status;
	const char *msg;
} answers[] = {
	{"OK\n", 1, 0, NULL},
	{"ERR 404 no such sandbox\n", 0, 404, "no such sandbox"},
	{"ERR 409 sandbox is hibernated", 0, 409, "sandbox is hibernated"},
	{"ERR 502 x", 0, 502, "x"},
	{"ERR 404\n", -1, 0, NULL},
	{"ERR 404 \n", -1, 0, NULL},
	{"ERR abc no\n", -1, 0, NULL},
	{"ERR 42 too small\n", -1, 0, NULL},
	{"ERR 4040 too big\n", -1, 0, NULL},
	{"OK", -1, 0, NULL},
	{"OK secret\n", -1, 0, NULL}, /* a SECRET answer is not a CONNECT one */
	{"", -1, 0, NULL},
	{"HTTP/1.1 200 OK\r\n", -1, 0, NULL},
};

START_TEST(parse_answer_table)
{
	char buf[NODESOCK_LINE_MAX];
	int status = 0;
	const char *msg = NULL;

	snprintf(buf, sizeof(buf), "%s", answers[_i].answer);
	ck_assert_int_eq(nodesock_parse_answer(buf, &status, &msg), answers[_i].want);
	if (answers[_i].want == 0) {
		ck_assert_int_eq(status, answers[_i].status);
		ck_assert_str_eq(msg, answers[_i].msg);
	}
}
END_TEST

/* OK with a pipe's write end: what is written through the received
 * descriptor comes out of the pipe kept here. */
START_TEST(ok_carries_a_descriptor)
{
	int sp[2], pp[2], sock = -1, status;
	char buf[NODESOCK_LINE_MAX], got[8] = "";
	const char *msg;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	ck_assert_int_eq(pipe(pp), 0);
	ck_assert_int_eq(nodesock_send_ok(sp[0], pp[1]), 0);
	close(pp[1]);
	ck_assert_int_eq(nodesock_recv(sp[1], buf, sizeof(buf), &sock), 3);
	ck_assert_int_eq(nodesock_parse_answer(buf, &status, &msg), 1);
	ck_assert_int_ne(sock, -1);
	ck_assert_int_eq(fcntl(sock, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(write(sock, "hi", 2), 2);
	close(sock);
	ck_assert_int_eq(read(pp[0], got, sizeof(got) - 1), 2);
	ck_assert_str_eq(got, "hi");
	close(pp[0]);
	close(sp[0]);
	close(sp[1]);
}
END_TEST

/* An error answer carries no descriptor; one too long for a line is cut
 * and still ends the line. */
START_TEST(err_round_trip)
{
	int sp[2], sock = 7, status = 0;
	char buf[NODESOCK_LINE_MAX], longmsg[600];
	const char *msg = NULL;
	ssize_t n;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	nodesock_send_err(sp[0], 409, "sandbox is starting");
	ck_assert_int_gt(nodesock_recv(sp[1], buf, sizeof(buf), &sock), 0);
	ck_assert_int_eq(sock, -1);
	ck_assert_int_eq(nodesock_parse_answer(buf, &status, &msg), 0);
	ck_assert_int_eq(status, 409);
	ck_assert_str_eq(msg, "sandbox is starting");

	memset(longmsg, 'x', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	nodesock_send_err(sp[0], 502, longmsg);
	n = nodesock_recv(sp[1], buf, sizeof(buf), &sock);
	ck_assert_int_eq(n, NODESOCK_LINE_MAX - 1);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_int_eq(nodesock_parse_answer(buf, &status, &msg), 0);
	ck_assert_int_eq(status, 502);
	ck_assert_uint_eq(strlen(msg), NODESOCK_LINE_MAX - 2 - strlen("ERR 502 "));

	close(sp[0]);
	ck_assert_int_eq(nodesock_recv(sp[1], buf, sizeof(buf), &sock), 0);
	close(sp[1]);
}
END_TEST

Suite *suite_nodesock(void)
{
	Suite *s = suite_create("nodesock");
	TCase *tc = tcase_create("nodesock");

	tcase_add_loop_test(tc, parse_request_table, 0, (int)(sizeof(reqs) / sizeof(reqs[0])));
	tcase_add_test(tc, connect_line);
	tcase_add_loop_test(tc, parse_answer_table, 0, (int)(sizeof(answers) / sizeof(answers[0])));
	tcase_add_test(tc, ok_carries_a_descriptor);
	tcase_add_test(tc, err_round_trip);
	suite_add_tcase(s, tc);
	return s;
}
