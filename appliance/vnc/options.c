/* Flag parsing for cloche-vnc: getopt_long into a struct vnc_options, with
 * every value range-checked here so the rest of the program can trust it. */
#include "options.h"
#include "size.h"

#include "common/version.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_DISPLAY = 256,
	OPT_LISTEN,
	OPT_RFB_PORT,
	OPT_HTTP_PORT,
	OPT_WEB_DIR,
	OPT_PASSWORD_FILE,
	OPT_ALLOWED_HOSTS,
	OPT_NAME,
	OPT_FRAME_MS,
	OPT_VIEW_ONLY,
	OPT_CONTROL,
	OPT_LOG_LEVEL,
	OPT_RESIZE,
	OPT_SIZE,
	OPT_STATE_DIR,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{"display", required_argument, NULL, OPT_DISPLAY},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"rfb-port", required_argument, NULL, OPT_RFB_PORT},
	{"http-port", required_argument, NULL, OPT_HTTP_PORT},
	{"web-dir", required_argument, NULL, OPT_WEB_DIR},
	{"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
	{"allowed-hosts", required_argument, NULL, OPT_ALLOWED_HOSTS},
	{"name", required_argument, NULL, OPT_NAME},
	{"frame-ms", required_argument, NULL, OPT_FRAME_MS},
	{"view-only", no_argument, NULL, OPT_VIEW_ONLY},
	{"control", required_argument, NULL, OPT_CONTROL},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"resize", required_argument, NULL, OPT_RESIZE},
	{"size", required_argument, NULL, OPT_SIZE},
	{"state-dir", required_argument, NULL, OPT_STATE_DIR},
	{"help", no_argument, NULL, OPT_HELP},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0},
};

void vnc_options_usage(const char *prog, int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fprintf(f,
		"Usage: %s [OPTION]...\n"
		"Serve an X display over VNC (RFB) and noVNC in a browser.\n"
		"\n"
		"  --display NAME        X display to serve (default $DISPLAY)\n"
		"  --listen ADDR         numeric address to listen on (default 0.0.0.0)\n"
		"  --rfb-port N          RFB port for VNC clients; 0 = off (default 5900)\n"
		"  --http-port N         noVNC web client + WebSocket port; 0 = off (default 6080)\n"
		"  --web-dir DIR         noVNC files (default /usr/share/novnc)\n"
		"  --password-file FILE  require VNC authentication; password is the\n"
		"                        file's first line (VNC uses its first 8 bytes)\n"
		"  --allowed-hosts LIST  names besides localhost, 127.0.0.1, ::1 and 10.0.2.15\n"
		"                        that a WebSocket's Host and Origin may carry\n"
		"                        (comma-separated, *.suffix; also CLOCHE_VNC_ALLOWED_HOSTS)\n"
		"  --view-only           ignore keyboard and pointer input from viewers\n"
		"  --control MODE        lease (default): people watch until they take control,\n"
		"                        and then the agent waits; shared: everyone drives at\n"
		"                        once (also CLOCHE_VNC_CONTROL)\n"
		"  --name NAME           desktop name shown by viewers (default cloche)\n"
		"  --frame-ms MS         least time between two screen grabs (default 20)\n"
		"  --resize on|off       let viewers with control set the desktop size\n"
		"                        (noVNC's remote resize; default off, also\n"
		"                        CLOCHE_VNC_RESIZE)\n"
		"  --size WxH            the desktop's size when no viewer asked for one\n"
		"                        (default: the X screen's size at start)\n"
		"  --state-dir DIR       keep what a restart must not lose there: the secret\n"
		"                        after a rekey and the control lease (default: none)\n"
		"  --log-level LEVEL     debug, info, warn or error (default info)\n"
		"  --help                show this text and exit\n"
		"  --version             print the version and exit\n"
		"\n"
		"CLOCHE_VNC_SECRET, when set, is the sandbox's secret: a WebSocket must\n"
		"carry it as ?secret= and it is the VNC password (when no --password-file).\n"
		"With --state-dir, a secret a rekey put in force outlives a restart.\n"
		"\n"
		"Logs are JSON lines on stderr.  Exits 0 on SIGTERM/SIGINT, 1 when the\n"
		"X connection is lost or start-up fails, 2 on bad flags.\n",
		prog);
}

/* Parses a decimal integer in [lo, hi]; -1 with e set otherwise. */
/* "lease" or "shared" into *shared. */
static int parse_control(const char *s, bool *shared, struct err *e)
{
	if (strcmp(s, "lease") == 0 || strcmp(s, "shared") == 0) {
		*shared = strcmp(s, "shared") == 0;
		return 0;
	}
	return err_set(e, 0, "--control: `%s` is not lease or shared", s);
}

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out, struct err *e)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return err_set(e, 0, "--%s: `%s` is not a number from %ld to %ld", flag, s, lo,
			       hi);
	*out = (int)v;
	return 0;
}

enum vnc_options_result vnc_options_parse(struct vnc_options *o, int argc, char **argv,
					  struct err *e)
{
	int c, lvl;
	bool control_set = false;
	const char *resize = NULL;

	*o = (struct vnc_options){
		.display = NULL,
		.listen = "0.0.0.0",
		.rfb_port = 5900,
		.http_port = 6080,
		.web_dir = "/usr/share/novnc",
		.password_file = NULL,
		.name = "cloche",
		.frame_ms = 20,
		.view_only = false,
		.log_level = LOG_INFO,
	};
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_DISPLAY:
			o->display = optarg;
			break;
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_RFB_PORT:
			if (parse_int("rfb-port", optarg, 0, 65535, &o->rfb_port, e) == -1)
				return VNC_OPTIONS_BAD;
			break;
		case OPT_HTTP_PORT:
			if (parse_int("http-port", optarg, 0, 65535, &o->http_port, e) == -1)
				return VNC_OPTIONS_BAD;
			break;
		case OPT_WEB_DIR:
			o->web_dir = optarg;
			break;
		case OPT_PASSWORD_FILE:
			o->password_file = optarg;
			break;
		case OPT_ALLOWED_HOSTS:
			o->allowed_hosts = optarg;
			break;
		case OPT_NAME:
			o->name = optarg;
			break;
		case OPT_FRAME_MS:
			if (parse_int("frame-ms", optarg, 1, 1000, &o->frame_ms, e) == -1)
				return VNC_OPTIONS_BAD;
			break;
		case OPT_RESIZE:
			resize = optarg;
			if (vnc_switch_parse(optarg, &o->resize) == -1) {
				err_set(e, 0, "--resize: `%s` is not on or off", optarg);
				return VNC_OPTIONS_BAD;
			}
			break;
		case OPT_SIZE:
			if (vnc_size_parse(optarg, &o->size_w, &o->size_h) == -1) {
				err_set(e, 0, "--size: `%s` is not WxH (e.g. 1280x800)", optarg);
				return VNC_OPTIONS_BAD;
			}
			break;
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case OPT_VIEW_ONLY:
			o->view_only = true;
			break;
		case OPT_CONTROL:
			if (parse_control(optarg, &o->shared_control, e) == -1)
				return VNC_OPTIONS_BAD;
			control_set = true;
			break;
		case OPT_LOG_LEVEL:
			lvl = log_level_parse(optarg);
			if (lvl < 0) {
				err_set(e, 0, "--log-level: `%s` is not debug, info, warn or error",
					optarg);
				return VNC_OPTIONS_BAD;
			}
			o->log_level = (enum log_level)lvl;
			break;
		case OPT_HELP:
			vnc_options_usage(argv[0], 0);
			return VNC_OPTIONS_EXIT;
		case OPT_VERSION:
			version_print("cloche-vnc");
			return VNC_OPTIONS_EXIT;
		case ':':
			err_set(e, 0, "option `%s` needs a value", argv[optind - 1]);
			return VNC_OPTIONS_BAD;
		default:
			err_set(e, 0, "unknown option `%s`", argv[optind - 1]);
			return VNC_OPTIONS_BAD;
		}
	}
	if (optind < argc) {
		err_set(e, 0, "unexpected argument `%s`", argv[optind]);
		return VNC_OPTIONS_BAD;
	}
	if (!o->display || !*o->display)
		o->display = getenv("DISPLAY");
	if (!o->display || !*o->display) {
		err_set(e, 0, "no X display: give --display or set DISPLAY");
		return VNC_OPTIONS_BAD;
	}
	if (o->rfb_port != 0 && o->rfb_port == o->http_port) {
		err_set(e, 0, "--rfb-port and --http-port are both %d", o->rfb_port);
		return VNC_OPTIONS_BAD;
	}
	if (o->rfb_port == 0 && o->http_port == 0) {
		err_set(e, 0, "--rfb-port and --http-port are both 0: nothing to serve");
		return VNC_OPTIONS_BAD;
	}
	if (!o->allowed_hosts)
		o->allowed_hosts = getenv("CLOCHE_VNC_ALLOWED_HOSTS");
	if (!control_set && getenv("CLOCHE_VNC_CONTROL") && *getenv("CLOCHE_VNC_CONTROL") &&
	    parse_control(getenv("CLOCHE_VNC_CONTROL"), &o->shared_control, e) == -1) {
		err_wrap(e, "CLOCHE_VNC_CONTROL");
		return VNC_OPTIONS_BAD;
	}
	/* The operator's per-sandbox switch; a flag wins.  An unknown word
	 * keeps resizing off (the safe side), with a warning. */
	if (!resize && (resize = getenv("CLOCHE_VNC_RESIZE")) && *resize &&
	    vnc_switch_parse(resize, &o->resize) == -1) {
		log_warn("unknown CLOCHE_VNC_RESIZE value: resizing stays off", "{s:s}", "value",
			 resize);
		o->resize = false;
	}
	{
		/* Keep a copy and wipe the value in place: /proc/<pid>/environ
		 * shows the environment block as it is in memory. */
		char *env = getenv("CLOCHE_VNC_SECRET");
		if (env && *env) {
			o->secret = strdup(env);
			explicit_bzero(env, strlen(env));
			if (!o->secret) {
				err_set(e, ENOMEM, "secret");
				return VNC_OPTIONS_BAD;
			}
		}
	}
	return VNC_OPTIONS_RUN;
}

void vnc_options_free(struct vnc_options *o)
{
	if (o->secret) {
		explicit_bzero(o->secret, strlen(o->secret));
		free(o->secret);
		o->secret = NULL;
	}
}
