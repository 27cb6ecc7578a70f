/* mcp-shell: the sandbox's shell and file tools over MCP (Streamable HTTP
 * at /mcp, port 8889).  This file reads the configuration, registers the
 * tool groups and runs the server; see docs/mcp.md. */
#include "mcp/shell/shell.h"
#include "mcp/shell/spawn.h"
#include "common/cfg.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static const struct cfg_opt opts[] = {
	{"listen", CFG_STR, NULL, "address to listen on (default: all)"},
	{"port", CFG_INT, "8889", "TCP port"},
	{"allowed-hosts", CFG_STR, "", "extra Host/Origin names accepted (comma-separated, *.suffix patterns)"},
	{"shell", CFG_STR, "/bin/bash", "shell that runs commands (SHELL -c COMMAND)"},
	{"max-output", CFG_SIZE, "64K", "run_command output kept per stream"},
	{"timeout", CFG_DURATION, "30s", "run_command default timeout"},
	{"max-timeout", CFG_DURATION, "10m", "largest timeout_ms a call may ask for"},
	{"max-file", CFG_SIZE, "1M", "largest file read_file/write_file/edit_file handle in one call"},
	{"process-buffer", CFG_SIZE, "1M", "output kept per background process"},
	{"max-processes", CFG_INT, "32", "background processes at once"},
	{"max-body", CFG_SIZE, "4M", "largest request body (413 above it)"},
	{"max-sessions", CFG_INT, "64", "MCP sessions at once"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

/* SIGTERM is mcp_server_run()'s. */
static const struct daemon_opts start = {
	.prog = "mcp-shell",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_MCP_SHELL",
	.usage_status = 2,
};

int main(int argc, char **argv)
{
	struct err e = ERR_INIT;
	struct daemon d;
	struct cfg *c;
	struct msh_conf conf;
	struct mcp_server *s;
	int r;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	conf = (struct msh_conf){
		.shell = cfg_str(c, "shell"),
		.max_output = cfg_size(c, "max-output"),
		.timeout_ms = (long)cfg_duration_ms(c, "timeout"),
		.max_timeout_ms = (long)cfg_duration_ms(c, "max-timeout"),
		.max_file = cfg_size(c, "max-file"),
		.ring = cfg_size(c, "process-buffer"),
		.max_procs = (unsigned)cfg_int(c, "max-processes"),
	};
	if (!conf.max_output || !conf.ring || !conf.max_file || conf.timeout_ms < 1 ||
	    conf.max_timeout_ms < conf.timeout_ms || !conf.max_procs || access(conf.shell, X_OK)) {
		err_set(&e, 0, "bad limits, or shell %s is not executable", conf.shell);
		daemon_die(2, "bad configuration", &e);
	}
	/* Orphans of helpers that die abnormally come back to us, not to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	s = mcp_server_new(&(struct mcp_server_opts){
				   .name = "cloche-shell",
				   .version = version_string(),
				   .instructions = "Shell and file access inside a disposable Linux sandbox "
						   "(Debian, user `agent`, home directory as the default working "
						   "directory). Use run_command for commands that finish, "
						   "start_process for servers, and the file tools for reading and "
						   "editing files.",
				   .listen = cfg_str(c, "listen"),
				   .port = (int)cfg_int(c, "port"),
				   .max_body = cfg_size(c, "max-body"),
				   .allowed_hosts = cfg_str(c, "allowed-hosts"),
				   .max_sessions = (unsigned)cfg_int(c, "max-sessions"),
			   },
			   &e);
	if (!s || msh_spawn_init(&e) || msh_exec_register(s, &conf, &e) ||
	    msh_procs_register(s, &conf, &e) || msh_files_register(s, &conf, &e) ||
	    msh_search_register(s, &conf, &e)) {
		mcp_server_free(s);
		daemon_end(&d);
		daemon_die(1, "mcp-shell cannot start", &e);
	}
	r = mcp_server_run(s);
	msh_procs_shutdown();
	mcp_server_free(s);
	daemon_end(&d);
	return r ? 1 : 0;
}
