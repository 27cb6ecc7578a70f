/* mcp-desktop under the control lease; see control.h. */
#include "control.h"

#include "appliance/x11/x11_lease.h"

#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HELP_TIMEOUT_S 600
#define HELP_TIMEOUT_MAX_S 3600
#define HELP_PROGRESS_MS 10000
#define HELP_REASK_MS 250 /* while cloche-vnc starts again */

static char display[64];

void desk_control_init(const char *d)
{
	snprintf(display, sizeof(display), "%s", d ? d : (getenv("DISPLAY") ?: ":0"));
}

/* "12 s", "4 min", "2 h" since an RFC 3339 time. */
static void ago(const char *iso, char *out, size_t cap)
{
	struct tm tm = {0};
	long s;

	if (!strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		snprintf(out, cap, "a while");
		return;
	}
	s = (long)(time(NULL) - timegm(&tm));
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, cap, "%ld s", s);
	else if (s < 7200)
		snprintf(out, cap, "%ld min", s / 60);
	else
		snprintf(out, cap, "%ld h", s / 3600);
}

/* Tells the agent of a person's turn it has not heard of. */
static void tell_handback(struct mcp_result *res, const json_t *hb)
{
	const char *note = json_string_value(json_object_get(hb, "note")) ?: "";
	const char *taken = json_string_value(json_object_get(hb, "taken")) ?: "?";
	const char *back = json_string_value(json_object_get(hb, "back")) ?: "?";

	if (json_is_true(json_object_get(hb, "left")))
		mcp_result_text(res, "Note: a person had control of this desktop from %s to %s "
				     "and left without a word; the screen may have changed.",
				taken, back);
	else if (note[0])
		mcp_result_text(res, "Note: a person had control of this desktop from %s to %s "
				     "and handed it back saying: %s",
				taken, back, note);
	else
		mcp_result_text(res, "Note: a person had control of this desktop from %s to %s; "
				     "the screen may have changed.",
				taken, back);
}

int desk_control_begin(const char *tool, struct mcp_result *res, int *fd)
{
	struct x11_lease_act out;
	struct err e = ERR_INIT;
	char since[32];

	*fd = x11_lease_act(display, tool, &out, &e);
	if (*fd == -2) {
		*fd = -1; /* no cloche-vnc: nobody can take control */
		return 1;
	}
	if (*fd >= 0) {
		if (out.handback)
			tell_handback(res, out.handback);
		json_decref(out.handback);
		return 1;
	}
	if (!out.held) {
		/* the lease could not be asked: acting beats refusing over a glitch */
		log_warn("cannot ask the control lease; acting anyway", "{s:s, s:s}", "tool", tool,
			 "error", e.msg);
		return 1;
	}
	ago(out.since, since, sizeof(since));
	mcp_result_error(res, "A person has control of this desktop since %s (%s ago); your "
			      "input was not sent. Screenshots still work. Call again later, or "
			      "call request_human_help to wait until they hand back.",
			 out.since, since);
	return 0;
}

json_t *desk_control_state(void)
{
	json_t *req = json_pack("{s:s}", "op", "state"), *st = NULL, *out, *help, *h;
	struct err e = ERR_INIT;
	int fd = req ? x11_lease_request(display, req, 500, &st, &e) : -1;
	size_t i;

	json_decref(req);
	if (fd < 0)
		return NULL;
	close(fd);
	help = json_array();
	json_array_foreach(json_object_get(st, "help"), i, h)
		json_array_append_new(help, json_pack("{s:O?, s:O?}", "reason",
						      json_object_get(h, "reason"), "since",
						      json_object_get(h, "since")));
	out = json_pack("{s:O?, s:o}", "control", json_object_get(st, "control"), "help", help);
	if (out && json_is_object(json_object_get(st, "holder")))
		json_object_set(out, "since",
				json_object_get(json_object_get(st, "holder"), "since"));
	json_decref(st);
	return out;
}

void desk_control_end(int fd)
{
	if (fd >= 0)
		close(fd);
}

static const char help_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"reason\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1000,"
	"\"description\":\"what you need a person to do, shown to them as is "
	"(e.g. 'Please solve the captcha on the login page')\"},"
	"\"timeout_s\":{\"type\":\"number\",\"minimum\":1,\"maximum\":3600,"
	"\"description\":\"give up waiting after this many seconds; default 600\"}},"
	"\"required\":[\"reason\"],\"additionalProperties\":false}";

/* Asks cloche-vnc for a person with reason r: the connection to wait on
 * for the answer.  first: a refusal or no cloche-vnc is the call's answer
 * (put in res, -1); later (cloche-vnc restarting) it is -1 to try again. */
static int help_ask(const json_t *r, struct mcp_result *res, bool first)
{
	json_t *req = json_pack("{s:s, s:O}", "op", "help", "reason", r), *ans = NULL;
	struct err le = ERR_INIT;
	int fd = req ? x11_lease_request(display, req, 2000, &ans, &le) : -1;

	json_decref(req);
	if (fd >= 0 && !json_is_true(json_object_get(ans, "ok"))) {
		if (first)
			mcp_result_error(res, "cannot ask for a person: %s",
					 json_string_value(json_object_get(ans, "error")) ?: "refused");
		close(fd);
		fd = -1;
	} else if (fd < 0 && first) {
		if (fd == -2)
			mcp_result_error(res, "nobody can watch this desktop: no VNC server runs on it");
		else
			mcp_result_error(res, "cannot ask for a person: %s",
					 le.msg[0] ? le.msg : "no memory");
	}
	json_decref(ans);
	return fd < 0 ? -1 : fd;
}

static int help_fn(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		   struct err *e)
{
	const json_t *r = json_object_get(args, "reason"), *t = json_object_get(args, "timeout_s");
	double timeout_s = HELP_TIMEOUT_S;
	json_t *ans = NULL, *a;
	const char *note;
	struct err le = ERR_INIT;
	uint64_t start = util_now_ms(), last_progress = start;
	AUTOCLOSE int fd = -1;

	if (!json_is_string(r) || json_string_length(r) == 0)
		return err_set(e, 0, "`reason` is required: a sentence saying what you need");
	if (json_string_length(r) > 1000)
		return err_set(e, 0, "`reason` is over 1000 bytes");
	if (t && (!json_is_number(t) || json_number_value(t) < 1 ||
		  json_number_value(t) > HELP_TIMEOUT_MAX_S))
		return err_set(e, 0, "`timeout_s` must be a number from 1 to %d", HELP_TIMEOUT_MAX_S);
	if (t)
		timeout_s = json_number_value(t);
	fd = help_ask(r, res, true);
	if (fd < 0)
		return 0;
	log_info("waiting for a person", "{s:f}", "timeout_s", timeout_s);
	for (;;) {
		uint64_t now = util_now_ms();
		int got;

		if (mcp_call_cancelled(call))
			return 0; /* closing withdraws the request */
		if (now - start >= (uint64_t)(timeout_s * 1000)) {
			mcp_result_text(res, "Nobody handed back within %.0f s. Your request stays "
					     "shown to people watching for 30 s more; call "
					     "request_human_help again with the same reason to keep "
					     "waiting.",
					timeout_s);
			mcp_result_structured(res, json_pack("{s:b}", "answered", 0));
			return 0;
		}
		if (now - last_progress >= HELP_PROGRESS_MS) {
			char msg[64];

			snprintf(msg, sizeof(msg), "waiting for a person (%llu s)",
				 (unsigned long long)((now - start) / 1000));
			mcp_call_progress(call, (double)(now - start) / 1000, 0, msg);
			last_progress = now;
		}
		if (fd < 0) {
			/* cloche-vnc is starting again: ask again as soon as it
			 * listens (it kept the request, and an answer given meanwhile) */
			usleep(HELP_REASK_MS * 1000);
			fd = help_ask(r, res, false);
			continue;
		}
		got = x11_lease_read(fd, 500, &ans, &le);
		if (got == 0)
			continue;
		if (got < 0) {
			/* Any X client may end cloche-vnc (it exits when its X
			 * connection is killed) and init starts it again. */
			log_warn("the wait for a person was cut off: asking again", "{s:s}", "error",
				 le.msg);
			close(fd);
			fd = -1;
			le = (struct err)ERR_INIT;
			continue;
		}
		break;
	}
	a = json_object_get(ans, "answer");
	note = json_string_value(json_object_get(a, "note"));
	if (json_is_true(json_object_get(a, "left")))
		mcp_result_text(res, "A person took control at %s; their page closed at %s without "
				     "handing back or leaving a note. Take a screenshot to see "
				     "where things are.",
				json_string_value(json_object_get(a, "taken")) ?: "?",
				json_string_value(json_object_get(a, "back")) ?: "?");
	else
		mcp_result_text(res, "A person took control at %s and handed it back at %s. "
				     "Their note: %s",
				json_string_value(json_object_get(a, "taken")) ?: "?",
				json_string_value(json_object_get(a, "back")) ?: "?",
				note && note[0] ? note : "(none)");
	mcp_result_structured(res, json_pack("{s:b, s:O?, s:O?, s:O?, s:O?}", "answered", 1,
					     "note", json_object_get(a, "note"), "left",
					     json_object_get(a, "left"), "taken",
					     json_object_get(a, "taken"), "back",
					     json_object_get(a, "back")));
	log_info("a person answered", "{s:I}", "waited_ms", (json_int_t)(util_now_ms() - start));
	json_decref(ans);
	return 0;
}

int desk_control_register(struct mcp_server *srv, struct err *e)
{
	struct mcp_tool t = {
		.name = "request_human_help",
		.title = "Ask a person for help",
		.description =
			"Ask a person watching this desktop to step in (a login, a captcha, a "
			"decision you cannot make). Your reason shows in their noVNC page and the "
			"dashboard. The call waits until a person takes control and hands it back, "
			"and answers with their note. Meanwhile screenshots work but input tools "
			"answer an error. Progress notifications come every 10 s.",
		.input_schema = help_schema,
		.fn = help_fn,
	};

	return mcp_server_add_tool(srv, &t, e);
}
