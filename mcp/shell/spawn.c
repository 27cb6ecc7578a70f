/* The spawner thread and the process-tree helper; see spawn.h.
 *
 * Everything after fork() in the helper and in the command's child runs
 * in a copy of a multi-threaded process, so it uses only system calls: no
 * malloc, no stdio, no locks.  The parent side prepares argv, envp and the
 * pipes before handing the job to the spawner thread. */
#include "mcp/shell/spawn.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_PIDS 8192

struct job {
	char *const *argv, *const *envp;
	const char *cwd;
	int child_fds[3];  /* become the command's 0, 1, 2 */
	int info_fd[2];    /* the helper reports the command's pid here */
	unsigned grace_ms;
	pid_t helper, pgid;
	int err;
	bool done;
	struct job *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct job *queue;
static pid_t server_pid;

/* --- in the helper (after fork: system calls only) -------------------- */

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static long parse_long(const char *s, const char **end)
{
	long v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	if (end)
		*end = s;
	return v;
}

/* Parent pid from /proc/<pid>/stat ("pid (comm) S ppid ..."); -1 if gone. */
static pid_t read_ppid(const char *pid)
{
	char path[64] = "/proc/", buf[512];
	size_t n = 6;
	ssize_t r;
	int fd;

	for (const char *p = pid; *p && n < sizeof(path) - 6; p++)
		path[n++] = *p;
	memcpy(path + n, "/stat", 6);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = '\0';
	for (ssize_t i = r - 1; i > 0; i--)
		if (buf[i] == ')') {
			if (i + 4 >= r)
				return -1;
			return (pid_t)parse_long(buf + i + 4, NULL);
		}
	return -1;
}

/* Sends sig to every descendant of this process.  Returns how many. */
static int signal_descendants(int sig)
{
	static pid_t pids[MAX_PIDS], ppids[MAX_PIDS];
	static char dbuf[8192];
	static unsigned char mark[MAX_PIDS];
	pid_t self = getpid();
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0, hits = 0;
	long r;

	if (fd == -1)
		return 0;
	while ((r = syscall(SYS_getdents64, fd, dbuf, sizeof(dbuf))) > 0) {
		for (long off = 0; off < r;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(dbuf + off);
			const char *end;
			long pid = parse_long(d->d_name, &end);
			off += d->d_reclen;
			if (*end || pid <= 0 || pid == self || n == MAX_PIDS)
				continue;
			pids[n] = (pid_t)pid;
			ppids[n] = read_ppid(d->d_name);
			mark[n] = 0;
			n++;
		}
	}
	close(fd);
	/* Mark the tree below self: repeat until no new member is found. */
	for (bool grew = true; grew;) {
		grew = false;
		for (int i = 0; i < n; i++) {
			if (mark[i])
				continue;
			bool below = ppids[i] == self;
			for (int j = 0; !below && j < n; j++)
				below = mark[j] && pids[j] == ppids[i];
			if (below) {
				mark[i] = 1;
				grew = true;
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (mark[i] && kill(pids[i], sig) == 0)
			hits++;
	return hits;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Closes every fd above 2 except the nkeep in keep[].  Reads /proc/self/fd
 * instead of closing a range, because each system call is slow under gVisor.
 * The listing is read whole before closing, so closing cannot disturb it. */
static void close_fds_except(const int *keep, int nkeep)
{
	char dbuf[8192];
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long r;

	if (fd == -1)
		return;
	while ((r = syscall(SYS_getdents64, fd, dbuf, sizeof(dbuf))) > 0)
		for (long off = 0; off < r;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(dbuf + off);
			const char *end;
			long v = parse_long(d->d_name, &end);
			bool kept = v == fd;
			off += d->d_reclen;
			for (int i = 0; i < nkeep && !kept; i++)
				kept = v == keep[i];
			if (!*end && d->d_name[0] && v > 2 && !kept)
				close((int)v);
		}
	close(fd);
}

static void put_err(const char *a, const char *b)
{
	if (write(2, a, strlen(a)) < 0 || write(2, b, strlen(b)) < 0 || write(2, "\n", 1) < 0)
		return;
}

/* Starts the command in its own process group with the job's fds as 0-2.
 * vfork: the helper is single-threaded and the child only makes system
 * calls before execve, so no copy of the address space is made (copies are
 * slow under gVisor).  Kept out of run_helper() so vfork cannot clobber its
 * locals.  Returns the pid, or -1. */
static __attribute__((noinline)) pid_t start_command(struct job *j)
{
	sigset_t none;
	pid_t cpid = vfork();

	if (cpid == 0) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		/* The helper left only this job's fds open, all O_CLOEXEC, so
		 * execve closes every one but the 0-2 that dup2 made. */
		for (int i = 0; i < 3; i++)
			if (dup2(j->child_fds[i], i) == -1)
				_exit(126);
		if (chdir(j->cwd) == -1) {
			put_err("mcp-shell: cannot chdir to ", j->cwd);
			_exit(126);
		}
		execve(j->argv[0], j->argv, j->envp);
		put_err("mcp-shell: cannot run ", j->argv[0]);
		_exit(127);
	}
	return cpid;
}

static __attribute__((noreturn)) void run_helper(struct job *j)
{
	sigset_t waitset;
	pid_t cpid;
	int status = 0, st;
	bool main_done = false, killing = false, killed_hard = false;
	uint64_t kill_at = 0;

	sigemptyset(&waitset);
	sigaddset(&waitset, SIGTERM);
	sigaddset(&waitset, SIGCHLD);
	sigprocmask(SIG_SETMASK, &waitset, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != server_pid)
		killing = true; /* the server died before we got here */
	setsid();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* fork() copied every fd of the server: its sockets and the pipes of
	 * other jobs in flight.  Those ends must not live on in this helper (it
	 * never execs, so O_CLOEXEC does nothing here), or the readers of those
	 * jobs never see EOF.  Keep only this job's own. */
	{
		int keep[] = {j->child_fds[0], j->child_fds[1], j->child_fds[2], j->info_fd[1]};
		close_fds_except(keep, (int)ARRAY_LEN(keep));
	}
	cpid = start_command(j);
	if (cpid > 0)
		setpgid(cpid, cpid); /* both sides, so kill(-pgid) works at once */
	if (write(j->info_fd[1], &cpid, sizeof(cpid)) < 0)
		cpid = -1;
	close(j->info_fd[1]);
	for (int i = 0; i < 3; i++)
		close(j->child_fds[i]);
	if (cpid < 0)
		_exit(127);
	for (;;) {
		siginfo_t si;
		struct timespec ts = {0, 50 * 1000 * 1000};
		pid_t r;

		while ((r = waitpid(-1, &st, WNOHANG)) > 0)
			if (r == cpid) {
				main_done = true;
				status = st;
			}
		if (r == -1 && errno == ECHILD)
			break;
		if (main_done && !killing) {
			/* Whatever the command left behind goes with it. */
			killing = true;
		}
		if (killing && !kill_at) {
			kill_at = mono_ms() + j->grace_ms;
			signal_descendants(SIGTERM);
		} else if (killing && !killed_hard && mono_ms() >= kill_at) {
			killed_hard = true;
		}
		if (killed_hard)
			signal_descendants(SIGKILL);
		if (sigtimedwait(&waitset, &si, killing ? &ts : &(struct timespec){1, 0}) == SIGTERM) {
			if (!main_done)
				status = SIGTERM; /* reported as killed if it never exits itself */
			killing = true;
		}
	}
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : SIGTERM));
}

/* --- the spawner thread ------------------------------------------------ */

static void *spawner(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		struct job *j;
		pid_t pid;

		while (!queue)
			pthread_cond_wait(&cv, &mu);
		j = queue;
		queue = j->next;
		pthread_mutex_unlock(&mu);
		pid = fork();
		if (pid == 0)
			run_helper(j);
		j->err = pid < 0 ? errno : 0;
		j->helper = pid;
		close(j->info_fd[1]);
		if (pid > 0) {
			pid_t cpid = -1;
			ssize_t n;
			do
				n = read(j->info_fd[0], &cpid, sizeof(cpid));
			while (n == -1 && errno == EINTR);
			j->pgid = n == (ssize_t)sizeof(cpid) && cpid > 0 ? cpid : pid;
		}
		close(j->info_fd[0]);
		pthread_mutex_lock(&mu);
		j->done = true;
		pthread_cond_broadcast(&cv);
	}
	return NULL;
}

int msh_spawn_init(struct err *e)
{
	pthread_t th;
	pthread_attr_t attr;
	sigset_t block, old;
	int rc;

	server_pid = getpid();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The helper runs on a copy of this thread's stack: give it room. */
	pthread_attr_setstacksize(&attr, 1u << 20);
	sigfillset(&block);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&th, &attr, spawner, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc ? err_set(e, rc, "start the spawner thread") : 0;
}

/* --- the caller's side -------------------------------------------------- */

/* environ with the string values of env set over it; one allocation for
 * the vector, one per overridden entry.  NULL with e set. */
static char **make_envp(const json_t *env, struct err *e)
{
	size_t n = 0, extra = env ? json_object_size(env) : 0, k = 0, base;
	const char *key;
	json_t *v;
	char **out;

	while (environ[n])
		n++;
	out = calloc(n + extra + 1, sizeof(*out));
	if (!out)
		return err_set(e, ENOMEM, "environment"), NULL;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		if (eq && env && json_object_getn(env, environ[i], (size_t)(eq - environ[i])))
			continue;
		out[k++] = environ[i];
	}
	base = k;
	json_object_foreach((json_t *)env, key, v) {
		if (!json_is_string(v) || !*key || strchr(key, '=')) {
			err_set(e, EINVAL, "env: `%s` must be a name with a string value", key);
			goto fail;
		}
		if (asprintf(&out[k], "%s=%s", key, json_string_value(v)) < 0) {
			out[k] = NULL;
			err_set(e, ENOMEM, "environment");
			goto fail;
		}
		k++;
	}
	return out;
fail:
	for (size_t i = base; i < k; i++)
		free(out[i]);
	free(out);
	return NULL;
}

static void free_envp(char **envp)
{
	size_t n = 0;

	if (!envp)
		return;
	while (environ[n])
		n++;
	for (size_t i = 0; envp[i]; i++) {
		bool from_environ = false;
		for (size_t j = 0; j < n && !from_environ; j++)
			from_environ = envp[i] == environ[j];
		if (!from_environ)
			free(envp[i]);
	}
	free(envp);
}

int msh_spawn(const struct msh_spawn_opts *o, struct msh_child *c, struct err *e)
{
	const char *home = getenv("HOME");
	const char *cwd = o->cwd ? o->cwd : home && *home ? home : "/";
	char *argv[] = {(char *)o->shell, "-c", (char *)o->command, NULL};
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
	struct job j = {0};
	struct stat st;
	char **envp;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->in_fd = c->out_fd = c->err_fd = -1;
	if (stat(cwd, &st) == -1)
		return err_set(e, errno, "cwd %s", cwd);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ENOTDIR, "cwd %s", cwd);
	envp = make_envp(o->env, e);
	if (!envp)
		return -1;
	if ((o->want_stdin ? pipe2(in, O_CLOEXEC) : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) == -1 ||
	    pipe2(out, O_CLOEXEC) == -1 || (!o->merge_stderr && pipe2(er, O_CLOEXEC) == -1) ||
	    pipe2(j.info_fd, O_CLOEXEC) == -1) {
		err_set(e, errno, "pipes");
		goto out;
	}
	j.argv = argv;
	j.envp = envp;
	j.cwd = cwd;
	j.child_fds[0] = in[0];
	j.child_fds[1] = out[1];
	j.child_fds[2] = o->merge_stderr ? out[1] : er[1];
	j.grace_ms = o->grace_ms ? o->grace_ms : 1000;
	pthread_mutex_lock(&mu);
	j.next = queue;
	queue = &j;
	pthread_cond_broadcast(&cv);
	while (!j.done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	j.info_fd[0] = j.info_fd[1] = -1; /* the spawner closed them */
	if (j.err) {
		err_set(e, j.err, "fork");
		goto out;
	}
	c->helper = j.helper;
	c->pgid = j.pgid;
	c->in_fd = o->want_stdin ? take_fd(&in[1]) : -1;
	c->out_fd = take_fd(&out[0]);
	c->err_fd = o->merge_stderr ? -1 : take_fd(&er[0]);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		util_closep(&in[i]);
		util_closep(&out[i]);
		util_closep(&er[i]);
		util_closep(&j.info_fd[i]);
	}
	free_envp(envp);
	return rc;
}

void msh_kill_tree(const struct msh_child *c)
{
	if (c->helper > 0)
		kill(c->helper, SIGTERM);
}

int msh_exit_code(int wstatus, int *signo)
{
	int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);

	*signo = code > 128 && code < 128 + NSIG ? code - 128 : 0;
	return code;
}
