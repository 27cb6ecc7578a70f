/* cloche-rec: records the sandbox's screen when the node asks.  A service of
 * cloche-init running as root, so the agent can neither stop its ffmpeg nor
 * touch the files; it answers only requests that carry the sandbox's
 * recorder secret (CLOCHE_REC_SECRET, which init hands to this service
 * alone and which the node keeps), so the agent cannot drive it either.
 *
 *   POST /start {"id": "rec-..."}        -> 201 {"recording": {...}}
 *   POST /stop  {"id"?, "reason"?}       -> 200 {"recording": null, "stopped": "rec-..."}
 *                                           (id may name the segment a recording
 *                                           began with; "stopped" is the one that ran)
 *   GET  /status                         -> 200 {"recording": {...}|null}
 *
 * docs/recording.md has the whole design. */
#include "recorder.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/http_server.h"
#include "common/json.h"
#include "common/log.h"
#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define SECRET_HEADER "X-Cloche-Rec-Secret"

struct app {
	struct hsrv *srv;
	struct recorder *rec;
	char secret[SECRET_TOKEN_MAX + 1];
};

static const struct cfg_opt rec_opts_tab[] = {
	{"port", CFG_INT, "8070", "port of the control endpoint"},
	{"listen", CFG_STR, NULL, "address of the control endpoint (default: all)"},
	{"dir", CFG_STR, "/var/lib/cloche/rec", "where recordings are written"},
	{"ffmpeg", CFG_STR, "/usr/bin/ffmpeg", "the encoder"},
	{"display", CFG_STR, ":0", "the X display to record"},
	{"fps", CFG_INT, "10", "capture rate (frames equal to the last are dropped)"},
	{"crf", CFG_INT, "30", "libx264 constant rate factor (lower: better, bigger)"},
	{"start-timeout", CFG_DURATION, "15s", "how long ffmpeg may take to write its first frame"},
	{"stop-timeout", CFG_DURATION, "10s", "how long ffmpeg may take to finish the file"},
	{"rec-secret", CFG_STR, "", "the secret every request must carry (" SECRET_HEADER ")"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

/* Constant-time comparison of the request's secret with ours; an empty
 * secret of ours refuses everything. */
static bool allowed(struct app *a, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	char got[128];
	int n = hsrv_req_header(req, SECRET_HEADER, got, sizeof(got));
	size_t want = strlen(a->secret);

	if (n > 0 && want > 0 && secret_equal(got, (size_t)n, a->secret, want))
		return true;
	hsrv_resp_error(resp, 403, "forbidden", "the recorder answers its node only");
	return false;
}

static void resp_err(struct hsrv_resp *resp, const struct err *e)
{
	int st = e->http_status ? e->http_status : 500;

	hsrv_resp_error(resp, st, NULL, e->msg);
}

static void h_start(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct app *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *id = NULL;

	if (!allowed(a, req, resp))
		return;
	body = cj_parse(req->body, req->body_len, 4096, 4, &e);
	if (!body || cj_req_str(body, "id", &id, &e) == -1) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	if (recorder_start(a->rec, id, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 201, recorder_status(a->rec));
}

static void h_stop(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct app *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *id = NULL, *reason = "api";
	AUTOJSON json_t *running = NULL;
	json_t *out;

	if (!allowed(a, req, resp))
		return;
	body = req->body_len ? cj_parse(req->body, req->body_len, 4096, 4, &e) : json_object();
	if (!body || cj_get_str(body, "id", NULL, &id, &e) == -1 ||
	    cj_get_str(body, "reason", "api", &reason, &e) == -1) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	/* The segment that runs now (a continuation of id, perhaps) is the
	 * one stopped: the answer names it. */
	running = recorder_status(a->rec);
	if (recorder_stop(a->rec, id, reason, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	out = recorder_status(a->rec);
	json_object_set(out, "stopped",
			json_object_get(json_object_get(running, "recording"), "id"));
	hsrv_resp_json(resp, 200, out);
}

/* POST /rekey {"secret"}: the node replaces the secret (a fork child and a
 * sandbox restored elsewhere wake with their parent's). */
static void h_rekey(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct app *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *s = NULL;

	if (!allowed(a, req, resp))
		return;
	body = cj_parse(req->body, req->body_len, 4096, 4, &e);
	if (!body || cj_req_str(body, "secret", &s, &e) == -1) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	if (!secret_token_ok(s, strlen(s))) {
		hsrv_resp_error(resp, 400, NULL, "`secret` must be 16-127 base64url characters");
		return;
	}
	snprintf(a->secret, sizeof(a->secret), "%s", s);
	log_info("the recorder's secret was replaced", NULL);
	hsrv_resp_json(resp, 200, json_pack("{s:b}", "rekeyed", 1));
}

static void h_status(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct app *a = ud;

	if (!allowed(a, req, resp))
		return;
	hsrv_resp_json(resp, 200, recorder_status(a->rec));
}

static int on_signal(void *ud, int fd)
{
	struct app *a = ud;
	struct signalfd_siginfo si;
	struct err e = ERR_INIT;

	if (fd < 0)
		return -1;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			recorder_reap(a->rec);
			continue;
		}
		/* The sandbox is going down: leave a playable file behind. */
		if (recorder_stop(a->rec, NULL, "shutdown", &e) == -1 && e.http_status != 404)
			log_warn("recording not finished at shutdown", "{s:s}", "error", e.msg);
		hsrv_stop(a->srv);
	}
	return 0;
}

/* ffmpeg's end comes as SIGCHLD on the same signalfd as SIGTERM. */
static const struct daemon_opts start = {
	.prog = "cloche-rec",
	.opts = rec_opts_tab,
	.nopts = ARRAY_LEN(rec_opts_tab),
	.env_prefix = "CLOCHE",
	.signals = DAEMON_SIG_FD | DAEMON_SIG_CHLD,
	.usage_status = 2,
};

extern char **environ;

int main(int argc, char **argv)
{
	struct daemon d;
	struct cfg *c;
	struct app a = {0};
	struct rec_opts o;
	struct err e = ERR_INIT;
	long long port;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	port = cfg_int(c, "port");
	o = (struct rec_opts){
		.dir = cfg_str(c, "dir"),
		.ffmpeg = cfg_str(c, "ffmpeg"),
		.display = cfg_str(c, "display"),
		.fps = (int)cfg_int(c, "fps"),
		.crf = (int)cfg_int(c, "crf"),
		.start_timeout_ms = cfg_duration_ms(c, "start-timeout"),
		.stop_timeout_ms = cfg_duration_ms(c, "stop-timeout"),
	};
	if (port < 0 || port > 65535 || o.fps < 1 || o.fps > 60 || o.crf < 0 || o.crf > 51 ||
	    o.dir[0] != '/' || o.ffmpeg[0] != '/') {
		err_set(&e, 0, "bad --port, --fps, --crf, --dir or --ffmpeg");
		daemon_die(2, "bad configuration", &e);
	}
	snprintf(a.secret, sizeof(a.secret), "%s", cfg_str(c, "rec-secret"));
	/* gVisor lets every user read /proc/PID/environ. */
	for (char **v = environ; v && *v; v++)
		if (strncmp(*v, "CLOCHE_REC_SECRET=", 18) == 0)
			explicit_bzero(*v + 18, strlen(*v + 18));
	if (!a.secret[0])
		log_warn("no CLOCHE_REC_SECRET: every request will be refused", NULL);
	a.srv = hsrv_new(&(struct hsrv_opts){.listen = cfg_str(c, "listen"), .port = (int)port,
					     .max_body = 4096},
			 &e);
	if (!a.srv || !(a.rec = recorder_new(&o, &e)) ||
	    hsrv_route(a.srv, "POST", "/start", h_start, &a, &e) ||
	    hsrv_route(a.srv, "POST", "/stop", h_stop, &a, &e) ||
	    hsrv_route(a.srv, "GET", "/status", h_status, &a, &e) ||
	    hsrv_route(a.srv, "POST", "/rekey", h_rekey, &a, &e) ||
	    hsrv_watch(a.srv, take_fd(&d.sigfd), on_signal, &a, &e))
		daemon_die(1, "cannot start", &e);
	log_info("cloche-rec up", "{s:i, s:s, s:s}", "port", hsrv_port(a.srv), "dir", o.dir,
		 "version", version_string());
	if (hsrv_run(a.srv))
		log_error("event loop failed", NULL);
	hsrv_free(a.srv);
	recorder_free(a.rec);
	explicit_bzero(a.secret, sizeof(a.secret));
	daemon_end(&d);
	return 0;
}
