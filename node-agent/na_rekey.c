/* New secrets for a fork child's cloche-vnc and cloche-rec; see na_rekey.h. */
#include "node-agent/na_rekey.h"
#include "node-agent/na_ghttp.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/rnd.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* One POST into the sandbox.  1 when it answered 200, 0 when nothing
 * listens on the port, -1 with e set otherwise. */
static int post(const char *id, int port, const char *path, const char *hdrs, const char *body,
		struct err *e)
{
	AUTOBUF struct buf b = BUF_INIT(16u << 10);
	AUTOCLOSE int fd = na_ghttp_connect(id, port, 2000, 10, e);
	const char *ans;
	int st;

	if (fd == -1) {
		if (e->code == ECONNREFUSED) {
			err_clear(e);
			return 0;
		}
		return -1;
	}
	st = na_ghttp_exchange(fd, "POST", path, port, hdrs, body, b.max, &b, &ans, e);
	if (st == -1)
		return -1;
	if (st != 200)
		return err_set(e, 0, "port %d answered %d to %s: %.200s", port, st, path, ans);
	return 1;
}

int na_rekey(struct na_sb *s, struct err *e)
{
	char vnc[sizeof(s->vnc_secret)], rec[sizeof(s->desk.rec_secret)], hdrs[400], body[120];
	int rc = 0, took_vnc = 0, took_rec = 0;

	if (rnd_token(18, vnc, sizeof(vnc), e) == -1 || rnd_token(18, rec, sizeof(rec), e) == -1)
		return err_wrap(e, "fresh secrets for %s", s->id);
	if (s->vnc_secret[0]) {
		snprintf(hdrs, sizeof(hdrs), "X-Cloche-Secret: %s\r\nX-Cloche-New-Secret: %s\r\n",
			 s->vnc_secret, vnc);
		rc = took_vnc = post(s->id, NA_VNC_PORT, "/cloche/rekey", hdrs, NULL, e);
	}
	if (rc != -1 && s->desk.rec_secret[0]) {
		snprintf(hdrs, sizeof(hdrs),
			 "Content-Type: application/json\r\nX-Cloche-Rec-Secret: %s\r\n",
			 s->desk.rec_secret);
		snprintf(body, sizeof(body), "{\"secret\":\"%s\"}", rec);
		rc = took_rec = post(s->id, NA_REC_PORT, "/rekey", hdrs, body, e);
	}
	explicit_bzero(hdrs, sizeof(hdrs));
	explicit_bzero(body, sizeof(body));
	if (rc == -1) {
		explicit_bzero(vnc, sizeof(vnc));
		explicit_bzero(rec, sizeof(rec));
		return err_wrap(e, "fresh secrets for %s", s->id);
	}
	if (took_vnc == 1)
		memcpy(s->vnc_secret, vnc, sizeof(vnc));
	if (took_rec == 1)
		memcpy(s->desk.rec_secret, rec, sizeof(rec));
	explicit_bzero(vnc, sizeof(vnc));
	explicit_bzero(rec, sizeof(rec));
	log_info("fresh secrets", "{s:s, s:b, s:b}", "id", s->id, "vnc", took_vnc == 1, "rec",
		 took_rec == 1);
	return 0;
}
