/* vnc-client: a small, real VNC viewer for tests, on libvncclient.
 *
 * It connects, waits for one complete framebuffer, performs the input
 * actions given on the command line in order (keys, typing, clicks), keeps
 * receiving updates for a while, and then reports on the last frame: as a
 * JSON line of statistics (--stats) and/or an image (--snapshot, PPM or PNG
 * by extension).  Encodings are lossless (no JPEG) so colour counts and
 * pixel comparisons mean something.  It also sends and receives cut text
 * (the plain RFB clipboard, Latin-1: libvncclient has no extended
 * clipboard).
 *
 * Exit status: 0 success, 1 connection/protocol failure or timeout,
 * 2 usage error. */
#include <X11/Xlib.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <rfb/rfbclient.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wctype.h>
#include <zlib.h>

enum action_kind {
	ACT_KEY,
	ACT_TYPE,
	ACT_TYPE_RAW,
	ACT_CLICK,
	ACT_MOVE,
	ACT_SLEEP,
	ACT_PASTE,
	ACT_RESIZE,
};

struct action {
	enum action_kind kind;
	const char *arg;
};

struct state {
	int frames;        /* FramebufferUpdates received since the screen was covered */
	uint8_t *covered;  /* 16x16 blocks received at least once */
	int bw, bh;        /* block grid */
	long uncovered;    /* blocks not received yet */
	char *cut;         /* the last ServerCutText, as UTF-8 */
	int sizes;         /* framebuffer (re)allocations: the server's size answers */
};

static struct {
	const char *host;
	int port;
	const char *password_file;
	const char *snapshot;
	bool stats;
	int after_ms;
	int hold_s;
	int timeout_s;
	int delay_ms;
	bool verbose;
	const char *probe; /* "X,Y": report that pixel in --stats */
	const char *cut_file; /* write the last ServerCutText there */
	struct action actions[256];
	int nactions;
} opt = {.host = "127.0.0.1", .port = 5900, .after_ms = -1, .timeout_s = 15, .delay_ms = 15};

static int tag;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void quiet_log(const char *fmt, ...)
{
	(void)fmt;
}

/* Records which part of the screen has arrived: the first frame is
 * complete only when every pixel was sent at least once. */
static void on_rect(rfbClient *cl, int x, int y, int w, int h)
{
	struct state *st = rfbClientGetClientData(cl, &tag);

	if (!st->covered || w <= 0 || h <= 0)
		return;
	for (int by = y / 16; by <= (y + h - 1) / 16 && by < st->bh; by++)
		for (int bx = x / 16; bx <= (x + w - 1) / 16 && bx < st->bw; bx++)
			if (!st->covered[by * st->bw + bx]) {
				st->covered[by * st->bw + bx] = 1;
				st->uncovered--;
			}
}

static void on_frame(rfbClient *cl)
{
	struct state *st = rfbClientGetClientData(cl, &tag);

	if (st->uncovered == 0)
		st->frames++;
}

static rfbBool on_resize(rfbClient *cl)
{
	struct state *st = rfbClientGetClientData(cl, &tag);
	size_t bytes = (size_t)cl->width * (size_t)cl->height * 4;

	free(cl->frameBuffer);
	cl->frameBuffer = calloc(1, bytes);
	free(st->covered);
	st->bw = (cl->width + 15) / 16;
	st->bh = (cl->height + 15) / 16;
	st->covered = calloc((size_t)st->bw * (size_t)st->bh, 1);
	st->uncovered = (long)st->bw * st->bh;
	st->frames = 0;
	/* A new size: ask for all of it (libvncclient's next request may
	 * still name the old size, and a larger screen's new part would
	 * never come).  Not for the first allocation, made before the pixel
	 * format is set. */
	if (st->sizes++ > 0 && cl->frameBuffer)
		SendFramebufferUpdateRequest(cl, 0, 0, cl->width, cl->height, FALSE);
	return cl->frameBuffer && st->covered ? TRUE : FALSE;
}

static char *get_password(rfbClient *cl)
{
	char buf[256];
	FILE *f;

	(void)cl;
	/* NULL, not "": libvncclient gives up on both, but leaks an empty one. */
	if (!opt.password_file)
		return NULL;
	f = fopen(opt.password_file, "r");
	if (!f) {
		fprintf(stderr, "vnc-client: open %s: %s\n", opt.password_file, strerror(errno));
		return NULL;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\r\n")] = '\0';
	return strdup(buf);
}

/* Receives messages for up to ms milliseconds (or until the frame counter
 * reaches want_frames when that is > 0).  Returns 0, or -1 on failure. */
static int pump(rfbClient *cl, struct state *st, int ms, int want_frames)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		uint64_t now = now_ms();
		int n;

		if (want_frames > 0 && st->frames >= want_frames)
			return 0;
		if (now >= end)
			return want_frames > 0 ? -1 : 0;
		n = WaitForMessage(cl, (unsigned)((end - now) > 100 ? 100000 : (end - now) * 1000));
		if (n < 0)
			return -1;
		if (n > 0 && !HandleRFBServerMessage(cl))
			return -1;
	}
}

static uint32_t keysym_of(const char *name)
{
	static const struct {
		const char *alias, *name;
	} aliases[] = {
		{"ctrl", "Control_L"}, {"control", "Control_L"}, {"shift", "Shift_L"},
		{"alt", "Alt_L"},      {"super", "Super_L"},     {"meta", "Meta_L"},
		{"enter", "Return"},   {"esc", "Escape"},
	};
	KeySym ks;

	if (strncmp(name, "0x", 2) == 0)
		return (uint32_t)strtoul(name, NULL, 16);
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcasecmp(name, aliases[i].alias) == 0)
			name = aliases[i].name;
	ks = XStringToKeysym(name);
	return ks == NoSymbol ? 0 : (uint32_t)ks;
}

/* "ctrl+shift+t": press in order, release in reverse. */
static int send_combo(rfbClient *cl, const char *combo)
{
	uint32_t syms[8];
	int n = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", combo);
	for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
		if (n == 8 || !(syms[n] = keysym_of(t))) {
			fprintf(stderr, "vnc-client: unknown key `%s`\n", t);
			return -1;
		}
		n++;
	}
	if (n == 0 && strcmp(combo, "+") == 0)
		syms[n++] = '+';
	for (int i = 0; i < n; i++)
		SendKeyEvent(cl, syms[i], TRUE);
	for (int i = n - 1; i >= 0; i--)
		SendKeyEvent(cl, syms[i], FALSE);
	return 0;
}

/* Decodes one UTF-8 sequence; returns its length, 0 at the end, -1 if bad. */
static int utf8_next(const unsigned char *s, uint32_t *cp)
{
	if (!s[0])
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
		return 2;
	}
	if ((s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		return 3;
	}
	if ((s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
	    (s[3] & 0xc0) == 0x80) {
		*cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
		      (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		return 4;
	}
	return -1;
}

/* Whether a US keyboard user holds Shift to type cp (what noVNC then sends
 * along with the shifted keysym). */
static bool needs_shift(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 'A' && cp <= 'Z') || strchr("~!@#$%^&*()_+{}|:\"<>?", (int)cp);
	return iswupper((wint_t)cp) != 0;
}

static int send_text(rfbClient *cl, struct state *st, const char *text, bool with_shift)
{
	const unsigned char *p = (const unsigned char *)text;
	uint32_t cp;
	int n;

	while ((n = utf8_next(p, &cp)) > 0) {
		uint32_t ks;
		bool shift = with_shift && needs_shift(cp);

		p += n;
		if (cp == '\n')
			ks = XK_Return;
		else if (cp == '\t')
			ks = XK_Tab;
		else if ((cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xff))
			ks = cp;
		else
			ks = 0x01000000u | cp;
		if (shift)
			SendKeyEvent(cl, XK_Shift_L, TRUE);
		SendKeyEvent(cl, ks, TRUE);
		SendKeyEvent(cl, ks, FALSE);
		if (shift)
			SendKeyEvent(cl, XK_Shift_L, FALSE);
		if (pump(cl, st, opt.delay_ms, 0) == -1)
			return -1;
	}
	if (n < 0) {
		fprintf(stderr, "vnc-client: --type text is not valid UTF-8\n");
		return -1;
	}
	return 0;
}

/* ClientCutText: UTF-8 text as Latin-1, `?` for what it cannot carry. */
static int send_paste(rfbClient *cl, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	char *l1 = malloc(strlen(text) + 1);
	int len = 0, n;
	uint32_t cp;

	if (!l1)
		return -1;
	while ((n = utf8_next(p, &cp)) > 0) {
		p += n;
		l1[len++] = cp <= 0xff ? (char)cp : '?';
	}
	n = n < 0 ? -1 : SendClientCutText(cl, l1, len) ? 0 : -1;
	free(l1);
	if (n == -1)
		fprintf(stderr, "vnc-client: cannot send --paste text\n");
	return n;
}

/* Keeps the last ServerCutText (Latin-1) as UTF-8 for --cut-text. */
static void on_cut_text(rfbClient *cl, const char *text, int len)
{
	struct state *st = rfbClientGetClientData(cl, &tag);
	char *u = malloc(2 * (size_t)len + 1), *q = u;

	if (!u)
		return;
	for (int i = 0; i < len; i++) {
		unsigned char b = (unsigned char)text[i];

		if (b < 0x80) {
			*q++ = (char)b;
		} else {
			*q++ = (char)(0xc0 | b >> 6);
			*q++ = (char)(0x80 | (b & 0x3f));
		}
	}
	*q = '\0';
	free(st->cut);
	st->cut = u;
}

static int parse_xy(const char *s, int *x, int *y)
{
	char *end;

	*x = (int)strtol(s, &end, 10);
	if (*end != ',')
		return -1;
	*y = (int)strtol(end + 1, &end, 10);
	return *end ? -1 : 0;
}

/* Asks for a desktop of w x h (SetDesktopSize) and waits for a complete
 * frame of that size; prints {"resize":"WxH","ok":..,"width":..,
 * "height":..,"ms":..} with the time from the request to that frame. */
static int ask_size(rfbClient *cl, struct state *st, const char *arg)
{
	uint64_t t0 = now_ms(), end = t0 + (uint64_t)opt.timeout_s * 1000;
	int w, h, sizes = st->sizes;

	if (sscanf(arg, "%dx%d", &w, &h) != 2 || w < 1 || h < 1 || w > 65535 || h > 65535) {
		fprintf(stderr, "vnc-client: `%s` is not WxH\n", arg);
		return -1;
	}
	if (!SendExtDesktopSize(cl, (uint16_t)w, (uint16_t)h))
		return -1;
	/* A size answer resets the frame counter (on_resize); a refusal is an
	 * answer at the old size. */
	while (!((st->sizes > sizes || (cl->width == w && cl->height == h)) && st->frames > 0) &&
	       now_ms() < end)
		if (pump(cl, st, 2, 0) == -1)
			return -1;
	printf("{\"resize\":\"%s\",\"ok\":%s,\"width\":%d,\"height\":%d,\"ms\":%llu}\n", arg,
	       cl->width == w && cl->height == h ? "true" : "false", cl->width, cl->height,
	       (unsigned long long)(now_ms() - t0));
	fflush(stdout);
	return 0;
}

static int run_action(rfbClient *cl, struct state *st, const struct action *a)
{
	int x, y;

	switch (a->kind) {
	case ACT_KEY:
		if (send_combo(cl, a->arg) == -1)
			return -1;
		break;
	case ACT_TYPE:
	case ACT_TYPE_RAW:
		return send_text(cl, st, a->arg, a->kind == ACT_TYPE);
	case ACT_CLICK:
	case ACT_MOVE:
		if (parse_xy(a->arg, &x, &y) == -1) {
			fprintf(stderr, "vnc-client: `%s` is not X,Y\n", a->arg);
			return -1;
		}
		SendPointerEvent(cl, x, y, 0);
		if (a->kind == ACT_CLICK) {
			SendPointerEvent(cl, x, y, rfbButton1Mask);
			SendPointerEvent(cl, x, y, 0);
		}
		break;
	case ACT_SLEEP:
		return pump(cl, st, atoi(a->arg), 0);
	case ACT_PASTE:
		if (send_paste(cl, a->arg) == -1)
			return -1;
		break;
	case ACT_RESIZE:
		return ask_size(cl, st, a->arg);
	}
	return pump(cl, st, opt.delay_ms, 0);
}

/* The client's pixel format is rfbGetClient(8,3,4)'s: R,G,B,pad bytes. */
static uint32_t pixel(const rfbClient *cl, int x, int y)
{
	const uint8_t *p = cl->frameBuffer + ((size_t)y * (size_t)cl->width + (size_t)x) * 4;

	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void print_stats(const rfbClient *cl, const uint32_t *first, int updates,
			uint64_t first_ms)
{
	size_t n = (size_t)cl->width * (size_t)cl->height, colors = 0, changed = 0;
	uint32_t *px = malloc(n * sizeof(*px));
	uint64_t hash = 1469598103934665603ull, sum[3] = {0, 0, 0};

	if (!px) {
		fprintf(stderr, "vnc-client: out of memory\n");
		return;
	}
	for (int y = 0; y < cl->height; y++) {
		for (int x = 0; x < cl->width; x++) {
			uint32_t v = pixel(cl, x, y);
			size_t i = (size_t)y * (size_t)cl->width + (size_t)x;

			px[i] = v;
			sum[0] += v >> 16;
			sum[1] += (v >> 8) & 0xff;
			sum[2] += v & 0xff;
			for (int b = 0; b < 3; b++) {
				hash ^= (v >> (8 * b)) & 0xff;
				hash *= 1099511628211ull;
			}
			if (first && first[i] != v)
				changed++;
		}
	}
	qsort(px, n, sizeof(*px), cmp_u32);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || px[i] != px[i - 1])
			colors++;
	printf("{\"width\":%d,\"height\":%d,\"colors\":%zu,\"uniform\":%s,"
	       "\"mean\":[%.1f,%.1f,%.1f],\"checksum\":\"%016llx\",\"updates\":%d,"
	       "\"first_frame_ms\":%llu",
	       cl->width, cl->height, colors, colors == 1 ? "true" : "false",
	       (double)sum[0] / (double)n, (double)sum[1] / (double)n, (double)sum[2] / (double)n,
	       (unsigned long long)hash, updates, (unsigned long long)first_ms);
	if (first)
		printf(",\"changed_pixels\":%zu", changed);
	if (opt.probe) {
		int x, y;

		if (parse_xy(opt.probe, &x, &y) == 0 && x >= 0 && y >= 0 && x < cl->width &&
		    y < cl->height) {
			uint32_t v = pixel(cl, x, y);

			printf(",\"probe\":[%u,%u,%u]", v >> 16, (v >> 8) & 0xff, v & 0xff);
		}
	}
	printf("}\n");
	free(px);
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int png_chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len)
{
	unsigned char hdr[8], crc[4];
	uLong c = crc32(0, (const Bytef *)type, 4);

	put_be32(hdr, len);
	memcpy(hdr + 4, type, 4);
	if (len)
		c = crc32(c, data, len);
	put_be32(crc, (uint32_t)c);
	return fwrite(hdr, 1, 8, f) == 8 && (len == 0 || fwrite(data, 1, len, f) == len) &&
			       fwrite(crc, 1, 4, f) == 4
		       ? 0
		       : -1;
}

static int write_image(const rfbClient *cl, const char *path)
{
	size_t w = (size_t)cl->width, h = (size_t)cl->height;
	size_t len = strlen(path);
	bool png = len > 4 && strcasecmp(path + len - 4, ".png") == 0;
	size_t raw_len = h * (w * 3 + (png ? 1 : 0));
	unsigned char *raw = malloc(raw_len), *p = raw;
	FILE *f;
	int rc = -1;

	if (!raw)
		return -1;
	for (size_t y = 0; y < h; y++) {
		if (png)
			*p++ = 0; /* filter: none */
		for (size_t x = 0; x < w; x++) {
			uint32_t v = pixel(cl, (int)x, (int)y);

			*p++ = (unsigned char)(v >> 16);
			*p++ = (unsigned char)(v >> 8);
			*p++ = (unsigned char)v;
		}
	}
	f = fopen(path, "wb");
	if (!f) {
		free(raw);
		return -1;
	}
	if (!png) {
		fprintf(f, "P6\n%zu %zu\n255\n", w, h);
		rc = fwrite(raw, 1, raw_len, f) == raw_len ? 0 : -1;
	} else {
		static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
		unsigned char ihdr[13];
		uLongf zlen = compressBound((uLong)raw_len);
		unsigned char *z = malloc(zlen);

		put_be32(ihdr, (uint32_t)w);
		put_be32(ihdr + 4, (uint32_t)h);
		ihdr[8] = 8;  /* bit depth */
		ihdr[9] = 2;  /* RGB */
		ihdr[10] = 0; /* deflate */
		ihdr[11] = 0; /* adaptive filtering */
		ihdr[12] = 0; /* no interlace */
		if (z && compress2(z, &zlen, raw, (uLong)raw_len, 6) == Z_OK &&
		    fwrite(sig, 1, 8, f) == 8 && png_chunk(f, "IHDR", ihdr, 13) == 0 &&
		    png_chunk(f, "IDAT", z, (uint32_t)zlen) == 0 && png_chunk(f, "IEND", NULL, 0) == 0)
			rc = 0;
		free(z);
	}
	if (fclose(f) != 0)
		rc = -1;
	free(raw);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vnc-client [OPTION]... [ACTION]...\n"
		"Connect to a VNC server, get a full frame, act, and report.\n"
		"\n"
		"  --host H              server address (default 127.0.0.1)\n"
		"  --port P              server port (default 5900)\n"
		"  --password-file F     VNC password in the file's first line\n"
		"  --snapshot FILE       write the last frame (.png, else binary PPM)\n"
		"  --stats               print a JSON line about the last frame\n"
		"  --after MS            keep receiving updates MS ms after the actions\n"
		"                        (default 500 when there are actions, else 0)\n"
		"  --hold S              stay connected S seconds before reporting\n"
		"  --delay MS            pause between input events (default 15)\n"
		"  --timeout S           give up waiting for the first frame (default 15)\n"
		"  --verbose             show libvncclient's messages\n"
		"  --probe X,Y           add that pixel's [r,g,b] to --stats\n"
		"  --cut-text FILE       write the last cut text the server sent (UTF-8) to FILE\n"
		"Actions, run in the order given after the first frame:\n"
		"  --key KEYS            X keysym names joined by '+' (ctrl+l, Return, 0x20ac)\n"
		"  --type TEXT           type UTF-8 text, with Shift held like a US keyboard\n"
		"                        user of noVNC would (shifted keysym + Shift_L)\n"
		"  --type-raw TEXT       type UTF-8 text as bare keysyms, no Shift events\n"
		"  --click X,Y           move there and click button 1\n"
		"  --move X,Y            move the pointer there\n"
		"  --sleep MS            keep receiving updates for MS ms\n"
		"  --paste TEXT          send UTF-8 text as cut text (Latin-1, `?` for the rest)\n"
		"  --resize WxH          ask for that desktop size (SetDesktopSize), wait for a\n"
		"                        complete frame of it, print a JSON line with the time\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"host", required_argument, NULL, 'H'},
		{"port", required_argument, NULL, 'p'},
		{"password-file", required_argument, NULL, 'P'},
		{"snapshot", required_argument, NULL, 's'},
		{"stats", no_argument, NULL, 'S'},
		{"after", required_argument, NULL, 'a'},
		{"hold", required_argument, NULL, 'o'},
		{"delay", required_argument, NULL, 'd'},
		{"timeout", required_argument, NULL, 't'},
		{"verbose", no_argument, NULL, 'v'},
		{"probe", required_argument, NULL, 'x'},
		{"cut-text", required_argument, NULL, 'C'},
		{"paste", required_argument, NULL, 'V'},
		{"resize", required_argument, NULL, 'Z'},
		{"key", required_argument, NULL, 'k'},
		{"type", required_argument, NULL, 'T'},
		{"type-raw", required_argument, NULL, 'R'},
		{"click", required_argument, NULL, 'c'},
		{"move", required_argument, NULL, 'm'},
		{"sleep", required_argument, NULL, 'z'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		enum action_kind kind;

		switch (c) {
		case 'H': opt.host = optarg; continue;
		case 'p': opt.port = atoi(optarg); continue;
		case 'P': opt.password_file = optarg; continue;
		case 's': opt.snapshot = optarg; continue;
		case 'S': opt.stats = true; continue;
		case 'a': opt.after_ms = atoi(optarg); continue;
		case 'o': opt.hold_s = atoi(optarg); continue;
		case 'd': opt.delay_ms = atoi(optarg); continue;
		case 't': opt.timeout_s = atoi(optarg); continue;
		case 'v': opt.verbose = true; continue;
		case 'x': opt.probe = optarg; continue;
		case 'C': opt.cut_file = optarg; continue;
		case 'h': usage(stdout); exit(0);
		case 'k': kind = ACT_KEY; break;
		case 'T': kind = ACT_TYPE; break;
		case 'R': kind = ACT_TYPE_RAW; break;
		case 'c': kind = ACT_CLICK; break;
		case 'm': kind = ACT_MOVE; break;
		case 'z': kind = ACT_SLEEP; break;
		case 'V': kind = ACT_PASTE; break;
		case 'Z': kind = ACT_RESIZE; break;
		default: usage(stderr); return -1;
		}
		if (opt.nactions == (int)(sizeof(opt.actions) / sizeof(opt.actions[0]))) {
			fprintf(stderr, "vnc-client: too many actions\n");
			return -1;
		}
		opt.actions[opt.nactions++] = (struct action){kind, optarg};
	}
	if (optind < argc || opt.port <= 0 || opt.port > 65535) {
		usage(stderr);
		return -1;
	}
	if (opt.after_ms < 0)
		opt.after_ms = opt.nactions ? 500 : 0;
	return 0;
}

static int write_cut(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct state st = {0};
	rfbClient *cl;
	uint32_t *first = NULL;
	uint64_t t0;
	int first_ms, rc = 1, zero = 0;

	if (parse_args(argc, argv) == -1)
		return 2;
	/* iswupper() needs a UTF-8 aware locale for non-ASCII letters. */
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		setlocale(LC_CTYPE, "");
	if (!opt.verbose) {
		rfbClientLog = quiet_log;
		rfbClientErr = quiet_log;
	}
	cl = rfbGetClient(8, 3, 4);
	if (!cl)
		return 1;
	free(cl->serverHost);
	cl->serverHost = strdup(opt.host);
	cl->serverPort = opt.port;
	cl->GetPassword = get_password;
	cl->FinishedFrameBufferUpdate = on_frame;
	cl->GotFrameBufferUpdate = on_rect;
	cl->MallocFrameBuffer = on_resize;
	cl->GotXCutText = on_cut_text;
	cl->canHandleNewFBSize = TRUE;
	/* Lossless encodings only: statistics must describe the real pixels. */
	cl->appData.encodingsString = "zrle hextile zlib raw";
	cl->appData.enableJPEG = FALSE;
	cl->connectTimeout = (unsigned)opt.timeout_s;
	cl->readTimeout = (unsigned)opt.timeout_s;
	rfbClientSetClientData(cl, &tag, &st);
	t0 = now_ms();
	if (!rfbInitClient(cl, &zero, NULL)) {
		/* rfbInitClient() has freed the client already. */
		fprintf(stderr, "vnc-client: cannot connect to %s:%d\n", opt.host, opt.port);
		return 1;
	}
	if (pump(cl, &st, opt.timeout_s * 1000, 1) == -1) {
		fprintf(stderr, "vnc-client: no complete frame within %d s\n", opt.timeout_s);
		goto out;
	}
	first_ms = (int)(now_ms() - t0);
	if (opt.nactions || opt.after_ms || opt.hold_s) {
		size_t n = (size_t)cl->width * (size_t)cl->height;

		first = malloc(n * sizeof(*first));
		if (!first)
			goto out;
		for (int y = 0; y < cl->height; y++)
			for (int x = 0; x < cl->width; x++)
				first[(size_t)y * (size_t)cl->width + (size_t)x] = pixel(cl, x, y);
	}
	for (int i = 0; i < opt.nactions; i++) {
		if (run_action(cl, &st, &opt.actions[i]) == -1) {
			fprintf(stderr, "vnc-client: connection failed during actions\n");
			goto out;
		}
	}
	if (pump(cl, &st, opt.after_ms + opt.hold_s * 1000, 0) == -1) {
		fprintf(stderr, "vnc-client: connection failed\n");
		goto out;
	}
	if (opt.stats)
		/* no pixel comparison with a first frame of another size */
		print_stats(cl, st.sizes > 1 ? NULL : first, st.frames, (uint64_t)first_ms);
	if (opt.snapshot && write_image(cl, opt.snapshot) == -1) {
		fprintf(stderr, "vnc-client: cannot write %s\n", opt.snapshot);
		goto out;
	}
	if (opt.cut_file && st.cut && write_cut(opt.cut_file, st.cut) == -1) {
		fprintf(stderr, "vnc-client: cannot write %s\n", opt.cut_file);
		goto out;
	}
	rc = 0;
out:
	free(first);
	free(st.covered);
	free(st.cut);
	free(cl->frameBuffer);
	cl->frameBuffer = NULL;
	rfbClientCleanup(cl);
	return rc;
}
