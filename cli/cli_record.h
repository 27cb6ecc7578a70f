/* The recording commands: record (start, or --stop REC), recordings (the
 * list), download (a recording's MP4) and trace (the sandbox's action
 * trace, JSON lines).  Handlers as in cli_sandbox.h. */
#ifndef CLOCHE_CLI_RECORD_H
#define CLOCHE_CLI_RECORD_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

/* record ID [--stop REC]: starts a recording of the sandbox's screen and
 * prints its id (how to stop it on stderr), or finishes REC. */
int cli_record_start(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* recordings ID: id, state, start, duration, bytes, why it ended. */
int cli_record_list(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* download ID REC [-o FILE]: the MP4 into FILE (REC.mp4 by default; "-"
 * is stdout), its size on stderr. */
int cli_record_download(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* trace ID: the action trace as the portal has it, on stdout. */
int cli_record_trace(struct cli_ctx *c, struct cli_args *a, const char *cmd);

#endif
