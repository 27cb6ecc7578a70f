/* Tests for the sockets init hands down (common/listenfd.c): a real
 * listening socket placed at fd 3 with LISTEN_FDS=1, as cloche-init
 * passes it. */
#include "tests/unit/unit.h"

#include "common/listenfd.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The steps run in a child of their own: fd 3 is the test runner's, and
 * the child puts the listening socket there.  Exits with the number of
 * the first step that went wrong, 0 when all held. */
static int child_steps(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 4) ||
	    getsockname(s, (struct sockaddr *)&sa, &sl))
		return 1;
	port = ntohs(sa.sin_port);
	if (dup2(s, 3) != 3)
		return 2;
	setenv("LISTEN_FDS", "1", 1);
	if (listenfd_take(port == 65535 ? 1 : port + 1) != -1)
		return 3; /* another port: none */
	if (getenv("LISTEN_FDS"))
		return 4; /* not for the server's children */
	if (!(fcntl(3, F_GETFD) & FD_CLOEXEC))
		return 5;
	if (listenfd_take(port) != 3)
		return 6;
	if (!(fcntl(3, F_GETFL) & O_NONBLOCK))
		return 8; /* ready for an event loop's accept */
	if (listenfd_take(port) != -1)
		return 7; /* handed out once */
	return 0;
}

START_TEST(takes_the_inherited_port_once)
{
	int st = 0;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_steps());
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "step %d failed",
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
END_TEST

Suite *suite_listenfd(void)
{
	Suite *s = suite_create("listenfd");
	TCase *tc = tcase_create("listenfd");

	tcase_add_test(tc, takes_the_inherited_port_once);
	suite_add_tcase(s, tc);
	return s;
}
