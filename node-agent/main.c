/* cloche-node: the node agent's start-up.  Reads the configuration, sets up
 * the pool, the node (na_sandbox.h) and its helpers (egress, the connect
 * socket, the heartbeat, the keeper), and serves the node API (na_api.h)
 * on the common HTTP loop.  SIGTERM stops serving and leaves the sandboxes
 * running: the next start re-adopts them. */
#include "node-agent/na_api.h"
#include "node-agent/na_btrfs.h"
#include "node-agent/na_connect.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_heartbeat.h"
#include "node-agent/na_s3.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_seal.h"
#include "node-agent/na_test.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/http_server.h"
#include "common/log.h"
#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct na_main {
	struct na_node *node;
	struct na_egress *egress;
	struct na_heartbeat *hb; /* NULL without --portal */
	struct hsrv *srv;
	struct na_api *api;
	char cred[256];
	size_t cred_len;
};

static const struct cfg_opt opts[] = {
	{"pool", CFG_STR, "/var/lib/cloche", "btrfs pool (templates/, sandboxes/)"},
	{"pool-image", CFG_STR, "/var/lib/cloche.img",
	 "loop image made and mounted on the pool when the pool is not on btrfs"},
	{"pool-image-size", CFG_INT, "64", "size of a new pool image in GiB (sparse)"},
	{"warm-pool", CFG_STR, "", "ready sandboxes to keep per template: name=N[,name=N]"},
	{"listen", CFG_STR, "127.0.0.1", "address of the node API"},
	{"port", CFG_INT, "7070", "port of the node API"},
	{"credential-file", CFG_STR, NULL, "file holding the node credential (bearer token)"},
	{"runsc-root", CFG_STR, "/run/cloche/runsc", "runsc --root"},
	{"connect-socket", CFG_STR, "/run/cloche/node.sock",
	 "unix socket of the port-connect path (cloche-node connect ID PORT)"},
	{"connect-socket-group", CFG_STR, "",
	 "also let this group use the connect socket (an unprivileged cloche-proxy)"},
	{"template-name", CFG_STR, "desktop", "template used when a create names none"},
	{"max-sandboxes", CFG_INT, "0",
	 "most sandboxes this node holds at once, warm members too (0: no limit)"},
	{"portal", CFG_STR, "", "the portal's URL: heartbeat to it (empty: none)"},
	{"proxy-admin", CFG_STR, "",
	 "this node's cloche-proxy admin URL (e.g. http://127.0.0.1:7081): drained before a "
	 "checkpoint (empty: no proxy on this node)"},
	{"s3-endpoint", CFG_STR, "",
	 "S3 API endpoint for offloaded checkpoints (L2), http(s)://host[:port]; empty: no L2"},
	{"s3-bucket", CFG_STR, "cloche", "the bucket of offloaded checkpoints and templates"},
	{"s3-region", CFG_STR, "us-east-1", "the bucket's region (signed into every request)"},
	{"s3-prefix", CFG_STR, "cloche/", "prefix of every key this node writes"},
	{"s3-seal-key-file", CFG_STR, NULL,
	 "file with the key (at least 32 characters) that seals the manifests this node writes to "
	 "S3 and checks those it reads; every node of a bucket needs the same one, nothing else "
	 "should have it (default: the environment, CLOCHE_S3_SEAL_KEY)"},
	{"s3-credential-file", CFG_STR, NULL,
	 "file with the access key and the secret key on two lines (default: the environment: "
	 "CLOCHE_S3_ACCESS_KEY/CLOCHE_S3_SECRET_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"},
	{"proxy-domain", CFG_STR, "cloche.localhost",
	 "the proxy's domain: the sandbox's servers accept *.<domain> as their Host"},
	{"node-name", CFG_STR, NULL, "this node's name at the portal (default: the host name)"},
	{"advertise-url", CFG_STR, NULL,
	 "the node API's URL as the portal should call it (default http://LISTEN:PORT)"},
	{"heartbeat-ms", CFG_INT, "2000", "heartbeat interval until the portal says otherwise"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
	{"test-hooks", CFG_STR, "",
	 "for tests only: pauses that widen race windows, point=ms[,...] (node-agent/na_test.h)"},
};


static int on_signal(void *ud, int fd)
{
	struct na_main *a = ud;
	struct signalfd_siginfo si;

	if (fd < 0)
		return -1;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		log_info("shutting down; sandboxes keep running", "{s:s}", "signal",
			 strsignal((int)si.ssi_signo));
		hsrv_stop(a->srv);
	}
	return 0;
}

/* Every sandbox may hold thousands of host tasks (gVisor's ptrace platform
 * gives each guest process stub threads), and a sandbox reaching its pids
 * limit must not leave the host short of pids: raise a small pid_max to the
 * 64-bit maximum. */
static void raise_pid_max(void)
{
	static const char path[] = "/proc/sys/kernel/pid_max";
	static const long want = 4194304;
	char buf[32] = {0};
	AUTOCLOSE int fd = open(path, O_RDWR | O_CLOEXEC);
	long have;

	if (fd == -1 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return;
	have = strtol(buf, NULL, 10);
	if (have >= want)
		return;
	snprintf(buf, sizeof(buf), "%ld\n", want);
	if (pwrite(fd, buf, strlen(buf), 0) == -1)
		log_warn("cannot raise kernel.pid_max", "{s:I, s:s}", "pid_max", (json_int_t)have,
			 "error", strerror(errno));
	else
		log_info("raised kernel.pid_max", "{s:I, s:I}", "from", (json_int_t)have, "to",
			 (json_int_t)want);
}

/* One agent per pool: two would adopt, sweep and tear down each other's
 * sandboxes.  Holds an flock on pool/.cloche-node.lock (which names our
 * pid) for the life of the process; released by the kernel however we
 * exit.  The fd, or -1 with e set. */
static int lock_pool(const char *pool, struct err *e)
{
	char path[4200], who[32] = "?";
	AUTOCLOSE int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/.cloche-node.lock", pool);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd == -1)
		return err_set(e, errno, "open `%s`", path);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		n = pread(fd, who, sizeof(who) - 1, 0);
		who[n > 0 ? n : 1] = '\0';
		who[strcspn(who, "\n")] = '\0';
		return err_set(e, 0, "another cloche-node (pid %s) serves the pool `%s`", who, pool);
	}
	snprintf(who, sizeof(who), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, who, strlen(who), 0) == -1)
		return err_set(e, errno, "write `%s`", path);
	return take_fd(&fd);
}

/* `cloche-node connect ID PORT`: a connection to a port inside a sandbox
 * through the running agent, relayed to stdin/stdout (like nc). */
static int connect_command(struct cfg *c, char *const *args, size_t n)
{
	const char *sock = cfg_str(c, "connect-socket");
	struct err e = ERR_INIT;
	char *end;
	long port;
	AUTOCLOSE int fd = -1;

	port = n == 3 ? strtol(args[2], &end, 10) : 0;
	if (n != 3 || *end || port < 1 || port > 65535) {
		fprintf(stderr, "usage: cloche-node [--connect-socket PATH] connect ID PORT\n");
		return 2;
	}
	fd = na_connect_request(sock, args[1], (int)port, &e);
	if (fd == -1 || na_connect_relay_stdio(fd, &e) == -1) {
		fprintf(stderr, "cloche-node connect: %s\n", e.msg);
		return 1;
	}
	return 0;
}

/* The pool's size limit, --pool-image-size in GiB, in bytes; -1 with e. */
static long long pool_image_bytes(struct cfg *c, struct err *e)
{
	long long gib = cfg_int(c, "pool-image-size");

	if (gib < 1 || gib > 1 << 20)
		return err_set(e, 0, "--pool-image-size: give GiB, 1..1048576");
	return gib << 30;
}

/* `cloche-node pool`: makes --pool usable (a btrfs directory, or the loop
 * image --pool-image formatted and mounted there) and its directories, as
 * the agent does when it starts; the shell side (scripts/lib/pool.sh) calls
 * it.  Prints nothing when all is well. */
static int pool_command(struct cfg *c, char *const *args, size_t n)
{
	struct err e = ERR_INIT;
	long long bytes = pool_image_bytes(c, &e);

	(void)args;
	if (n != 1) {
		fprintf(stderr, "usage: cloche-node [--pool DIR] [--pool-image FILE] "
				"[--pool-image-size GIB] pool\n");
		return 2;
	}
	if (bytes == -1 || na_btrfs_pool_ensure(cfg_str(c, "pool"), cfg_str(c, "pool-image"), bytes,
						&e) == -1) {
		fprintf(stderr, "cloche-node pool: %s\n", e.msg);
		return 1;
	}
	return 0;
}

static void read_credential(struct na_main *a, const char *path)
{
	struct err e = ERR_INIT;
	int n = secret_read_file(path, a->cred, sizeof(a->cred), 16, &e);

	if (n < 0)
		daemon_die(1, "cannot start", &e);
	a->cred_len = (size_t)n;
}

/* The S3 client of --s3-*: keys from --s3-credential-file (access key and
 * secret key on two lines) or the environment.  NULL with e. */
static struct na_s3 *open_s3(struct cfg *c, struct err *e)
{
	char keys[512] = "", *nl;
	const char *ak = NULL, *sk = NULL;
	struct na_s3 *s3;

	if (cfg_str(c, "s3-credential-file")) {
		const char *path = cfg_str(c, "s3-credential-file");
		AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd == -1 ? -1 : read(fd, keys, sizeof(keys) - 1);

		if (n < 0)
			return err_set(e, errno, "--s3-credential-file `%s`", path), NULL;
		keys[n] = '\0';
		nl = strchr(keys, '\n');
		if (!nl)
			return err_set(e, 0, "--s3-credential-file: give the access key and the secret "
					     "key on two lines"),
			       NULL;
		*nl = '\0';
		nl[1 + strcspn(nl + 1, "\r\n")] = '\0';
		keys[strcspn(keys, "\r")] = '\0';
		ak = keys;
		sk = nl + 1;
	} else {
		ak = getenv("CLOCHE_S3_ACCESS_KEY") ? getenv("CLOCHE_S3_ACCESS_KEY")
						    : getenv("AWS_ACCESS_KEY_ID");
		sk = getenv("CLOCHE_S3_SECRET_KEY") ? getenv("CLOCHE_S3_SECRET_KEY")
						    : getenv("AWS_SECRET_ACCESS_KEY");
	}
	if (!ak || !*ak || !sk || !*sk)
		return err_set(e, 0, "--s3-endpoint needs keys: --s3-credential-file, or "
				     "CLOCHE_S3_ACCESS_KEY and CLOCHE_S3_SECRET_KEY"),
		       NULL;
	s3 = na_s3_new(&(struct na_s3_opts){.endpoint = cfg_str(c, "s3-endpoint"),
					     .bucket = cfg_str(c, "s3-bucket"),
					     .region = cfg_str(c, "s3-region"),
					     .access_key = ak,
					     .secret_key = sk,
					     .attempts = getenv("CLOCHE_S3_ATTEMPTS")
								 ? atoi(getenv("CLOCHE_S3_ATTEMPTS"))
								 : 0},
		       e);
	explicit_bzero(keys, sizeof(keys));
	return s3;
}

/* The seal key of the manifests in S3 (na_seal.h), from its file or the
 * environment; L2 is refused without one. */
static int open_seal(struct cfg *c, struct na_seal *k, struct err *e)
{
	const char *path = cfg_str(c, "s3-seal-key-file");
	const char *env = getenv("CLOCHE_S3_SEAL_KEY");
	char key[512];
	int rc;

	if (path) {
		if (secret_read_file(path, key, sizeof(key), NA_SEAL_KEY_MIN, e) == -1)
			return err_wrap(e, "--s3-seal-key-file");
	} else if (env && *env) {
		snprintf(key, sizeof(key), "%s", env);
	} else {
		return err_set(e, 0, "--s3-endpoint needs a seal key for its manifests: "
				     "--s3-seal-key-file, or CLOCHE_S3_SEAL_KEY (at least %d characters, "
				     "the same on every node of the bucket)",
			       NA_SEAL_KEY_MIN);
	}
	rc = na_seal_init(k, key, strlen(key), e);
	explicit_bzero(key, sizeof(key));
	return rc;
}

/* `cloche-node s3 ...`: the S3 client alone, configured from the environment. */
static int s3_command(struct cfg *c, char *const *args, size_t n)
{
	(void)c;
	return na_s3_cli_main((int)n, args);
}

static const struct daemon_cmd commands[] = {
	{"connect", "ID PORT", connect_command},
	{"pool", "", pool_command},
	{"s3", "...", s3_command},
};

static const struct daemon_opts start = {
	.prog = "cloche-node",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_NODE",
	.cmds = commands,
	.ncmds = ARRAY_LEN(commands),
	.signals = DAEMON_SIG_FD,
};

int main(int argc, char **argv)
{
	struct na_s3 *s3 = NULL;
	struct na_seal seal;
	struct err e = ERR_INIT;
	struct daemon d;
	struct cfg *c;
	struct na_main a;
	struct hsrv_opts ho = {0};
	struct na_node_opts no;
	long long pool_bytes;
	int rc;
	struct na_connect *conn;
	bool busy;

	memset(&a, 0, sizeof(a));
	/* Signals go to the signalfd: blocked here, before any thread exists. */
	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	if (na_test_hooks_set(cfg_str(c, "test-hooks"), &e) == -1)
		daemon_die(1, "bad configuration", &e);
	if (na_test_hooks_on())
		log_warn("test hooks are on: this agent pauses on purpose (tests only)", "{s:s}",
			 "test_hooks", cfg_str(c, "test-hooks"));
	if (!cfg_str(c, "credential-file")) {
		err_set(&e, 0, "--credential-file is required");
		daemon_die(1, "bad configuration", &e);
	}
	read_credential(&a, cfg_str(c, "credential-file"));

	memset(&no, 0, sizeof(no));
	no.pool = cfg_str(c, "pool");
	no.runsc_root = cfg_str(c, "runsc-root");
	no.template_name = cfg_str(c, "template-name");
	no.warm = cfg_str(c, "warm-pool");
	if (cfg_int(c, "max-sandboxes") < 0 || cfg_int(c, "max-sandboxes") > 100000) {
		err_set(&e, 0, "--max-sandboxes: give 0 (no limit) to 100000");
		daemon_die(1, "bad configuration", &e);
	}
	no.max_sandboxes = (int)cfg_int(c, "max-sandboxes");
	no.proxy_domain = cfg_str(c, "proxy-domain");
	no.s3 = NULL;
	no.s3_prefix = cfg_str(c, "s3-prefix");
	if (*cfg_str(c, "s3-endpoint")) {
		if (open_seal(c, &seal, &e) == -1 || !(s3 = open_s3(c, &e)))
			daemon_die(1, "bad configuration", &e);
		no.s3 = s3;
		no.seal = &seal;
	}
	no.proxy_admin = cfg_str(c, "proxy-admin");
	no.credential = a.cred;
	if (*no.proxy_admin && strncmp(no.proxy_admin, "http://", 7) != 0 &&
	    strncmp(no.proxy_admin, "https://", 8) != 0) {
		err_set(&e, 0, "--proxy-admin: `%s` is not an http(s) URL", no.proxy_admin);
		daemon_die(1, "bad configuration", &e);
	}
	pool_bytes = pool_image_bytes(c, &e);
	if (pool_bytes == -1)
		daemon_die(1, "bad configuration", &e);
	if (na_btrfs_pool_ensure(no.pool, cfg_str(c, "pool-image"), pool_bytes, &e) == -1)
		daemon_die(1, "cannot set up the pool", &e);
	if (lock_pool(no.pool, &e) == -1)
		daemon_die(1, "cannot start", &e);
	raise_pid_max();
	a.egress = na_egress_new(&e);
	if (!a.egress)
		daemon_die(1, "cannot start", &e);
	no.egress = a.egress;
	a.node = na_node_new(&no, &e);
	if (!a.node)
		daemon_die(1, "bad configuration", &e);
	na_node_adopt(a.node);
	conn = na_connect_start(a.node, cfg_str(c, "connect-socket"), &e);
	if (!conn || (*cfg_str(c, "connect-socket-group") &&
		      na_connect_share(conn, cfg_str(c, "connect-socket-group"), &e) == -1))
		daemon_die(1, "cannot start", &e);

	ho.listen = cfg_str(c, "listen");
	ho.port = (int)cfg_int(c, "port");
	ho.max_body = 1 << 16;
	a.srv = hsrv_new(&ho, &e);
	if (!a.srv)
		daemon_die(1, "cannot listen", &e);
	if (hsrv_watch(a.srv, take_fd(&d.sigfd), on_signal, &a, &e) == -1 ||
	    !(a.api = na_api_new(a.srv, a.node, a.cred, a.cred_len, &e)))
		daemon_die(1, "cannot start", &e);
	if (*cfg_str(c, "portal")) {
		struct na_heartbeat_opts hbo = {0};
		char host[256] = "", self[512];
		long iv = (long)cfg_int(c, "heartbeat-ms");

		if (strncmp(cfg_str(c, "portal"), "http://", 7) != 0 &&
		    strncmp(cfg_str(c, "portal"), "https://", 8) != 0) {
			err_set(&e, 0, "--portal: `%s` is not an http(s) URL", cfg_str(c, "portal"));
			daemon_die(1, "bad configuration", &e);
		}
		if (iv < 200 || iv > 60000) {
			err_set(&e, 0, "--heartbeat-ms: give 200..60000");
			daemon_die(1, "bad configuration", &e);
		}
		if (cfg_str(c, "advertise-url")) {
			snprintf(self, sizeof(self), "%s", cfg_str(c, "advertise-url"));
		} else if (!*ho.listen || strcmp(ho.listen, "0.0.0.0") == 0 ||
			   strcmp(ho.listen, "::") == 0) {
			err_set(&e, 0, "--portal with --listen %s needs --advertise-url: the portal "
				       "must know an address it can call",
				*ho.listen ? ho.listen : "(all)");
			daemon_die(1, "bad configuration", &e);
		} else {
			snprintf(self, sizeof(self), strchr(ho.listen, ':') ? "http://[%s]:%d"
									  : "http://%s:%d",
				 ho.listen, hsrv_port(a.srv));
		}
		if (cfg_str(c, "node-name"))
			snprintf(host, sizeof(host), "%s", cfg_str(c, "node-name"));
		else if (gethostname(host, sizeof(host) - 1) == -1 || !*host)
			snprintf(host, sizeof(host), "node");
		hbo.portal = cfg_str(c, "portal");
		hbo.name = host;
		hbo.url = self;
		hbo.credential = a.cred;
		hbo.interval_ms = iv;
		a.hb = na_heartbeat_start(a.node, &hbo, &e);
		if (!a.hb)
			daemon_die(1, "cannot start", &e);
	}
	if (na_node_keeper_start(a.node, &e) == -1)
		daemon_die(1, "cannot start", &e);
	log_info("serving", "{s:s, s:i, s:s, s:s}", "listen", ho.listen, "port", hsrv_port(a.srv),
		 "pool", no.pool, "version", version_string());
	rc = hsrv_run(a.srv);
	na_heartbeat_stop(a.hb);
	a.hb = NULL;
	/* A create or destroy in progress gets a few seconds; one that takes
	 * longer is left to the next start (adopted or cleaned up), and then
	 * nothing it uses may be freed. */
	busy = na_api_wait(a.api, 5000) > 0;
	if (!na_connect_stop(conn))
		busy = true; /* its request threads still use the node */
	if (!na_node_keeper_stop(a.node) || busy) {
		/* Threads still work on sandboxes: leave everything to the exit
		 * (and the half-done work to the next start) instead of freeing
		 * what they use. */
		log_warn("stopped with work in progress; the next start finishes or removes it",
			 "{s:i}", "requests", na_api_wait(a.api, 0));
		fflush(NULL);
		_exit(rc == 0 ? 0 : 1);
	}
	/* Answers of work that ended after the loop's last round are released
	 * the normal way while their connections still exist; they are never
	 * sent: the loop does not turn again. */
	na_api_free(a.api);
	hsrv_free(a.srv);
	na_node_free(a.node);
	na_s3_free(s3);
	explicit_bzero(&seal, sizeof(seal));
	na_egress_free(a.egress);
	daemon_end(&d);
	log_info("stopped", NULL);
	na_test_pause(NA_HOOK_EXIT); /* a thread still using what was freed would show now */
	return rc == 0 ? 0 : 1;
}
