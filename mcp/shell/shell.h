/* mcp-shell's configuration and the tool groups it registers.  Each group
 * lives in its own file and receives the configuration as its tools' ud. */
#ifndef CLOCHE_MCP_SHELL_H
#define CLOCHE_MCP_SHELL_H

#include "common/err.h"
#include "mcp/lib/mcp.h"

#include <stddef.h>

struct msh_conf {
	const char *shell;        /* "/bin/bash": commands run as SHELL -c COMMAND */
	size_t max_output;        /* per stream of run_command, bytes */
	long timeout_ms;          /* run_command default */
	long max_timeout_ms;      /* largest timeout_ms accepted */
	size_t max_file;          /* read_file/write_file/edit_file limit, bytes */
	size_t ring;              /* output kept per background process, bytes */
	unsigned max_procs;       /* background processes at once */
};

/* run_command (exec.c). */
int msh_exec_register(struct mcp_server *s, struct msh_conf *c, struct err *e);

/* start_process, list_processes, read_process_output, kill_process
 * (procs.c).  msh_procs_shutdown() kills every process tree; call it when
 * the server stops. */
int msh_procs_register(struct mcp_server *s, struct msh_conf *c, struct err *e);
void msh_procs_shutdown(void);

/* read_file, write_file, edit_file, list_directory, stat_path, delete_path
 * (files.c). */
int msh_files_register(struct mcp_server *s, struct msh_conf *c, struct err *e);

/* glob, grep (search.c). */
int msh_search_register(struct mcp_server *s, struct msh_conf *c, struct err *e);

/* Resolves a path argument: absolute paths as they are, relative ones
 * against $HOME.  Writes into out (PATH_MAX); returns out. */
char *msh_path(const char *in, char *out);

#endif
