/* The suites of unit-mcp-shell, and the fixture they share (harness.c).
 *
 * mcp-shell's tool handlers are static: a test reaches them the way a
 * client does, through a real MCP server (mcp/lib) on a thread of the test
 * process with the four tool groups registered as main.c registers them,
 * and tools/call requests over HTTP.  Every test gets a fresh temporary
 * directory that is also $HOME, so relative paths and the default working
 * directory land in it.  Tests run in Check's fork mode (the default): the
 * spawner thread, the table of background processes and the server are
 * per process. */
#ifndef CLOCHE_TESTS_UNIT_MCP_SHELL_SUITES_H
#define CLOCHE_TESTS_UNIT_MCP_SHELL_SUITES_H

#include "mcp/shell/shell.h"

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

Suite *suite_msh_spawn(void);
Suite *suite_msh_exec(void);
Suite *suite_msh_procs(void);
Suite *suite_msh_files(void);
Suite *suite_msh_search(void);

/* The limits a test runs with unless its TCase sets others. */
#define MSH_T_CONF                                                                      \
	((struct msh_conf){.shell = "/bin/bash", .max_output = 4096, .timeout_ms = 5000, \
			   .max_timeout_ms = 10000, .max_file = 4096, .ring = 4096,      \
			   .max_procs = 4})

/* Unchecked fixture (Check's parent process, once per TCase): the root
 * every test's directory is made in; removed at the end even when a test
 * failed.  Under $TMPDIR, else /tmp. */
void msh_t_root_make(void);
void msh_t_root_remove(void);

/* Checked fixtures (in the test's process).  msh_t_dir_setup() makes the
 * test's directory, sets $HOME to it and starts the spawner thread;
 * msh_t_server_setup() does that and starts a server with every tool group
 * and conf c, and opens a session.  The teardowns stop what was started
 * (background processes included) and remove the directory. */
void msh_t_dir_setup(void);
void msh_t_dir_teardown(void);
void msh_t_server_setup(const struct msh_conf *c);
void msh_t_server_teardown(void);

/* The answer to one tools/call; valid until the test's teardown. */
struct msh_ans {
	json_t *raw;         /* the JSON-RPC response */
	const json_t *sc;    /* result.structuredContent, or NULL */
	bool is_error;       /* result.isError: the tool reported a failure */
	long code;           /* error.code when the request was refused (-32602), else 0 */
	const char *message; /* error.message, or "" */
	size_t nitems;       /* content items */
	char *text;          /* their texts, joined with '\n' */
};

/* Calls tool with the arguments json_pack(fmt, ...) makes ("{}" for none). */
const struct msh_ans *msh_call(const char *tool, const char *fmt, ...);

/* The text of content item i, or "<absent>". */
const char *msh_item(const struct msh_ans *a, size_t i);

/* Members of an object: a string ("<absent>" when missing or not one), an
 * integer (-999999 when missing), a boolean (-1 when missing). */
#define MSH_NO_INT (-999999LL)
const char *msh_str(const json_t *o, const char *key);
long long msh_int(const json_t *o, const char *key);
int msh_bool(const json_t *o, const char *key);

/* The test's directory ($HOME), and rel inside it (valid until teardown). */
const char *msh_dir(void);
const char *msh_p(const char *rel);

/* Writes content (len bytes; -1: strlen) to rel, making parent directories. */
void msh_put(const char *rel, const char *content, ssize_t len);

/* The contents of rel (valid until teardown), or NULL when it cannot be read. */
const char *msh_get(const char *rel);

/* True when no process pid exists any more (not even a zombie). */
bool msh_pid_gone(pid_t pid);

/* Waits until rel holds a pid written by a test command; returns it. */
pid_t msh_wait_pidfile(const char *rel);

#endif
