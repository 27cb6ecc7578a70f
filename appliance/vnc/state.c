/* cloche-vnc's state across its restarts; see state.h. */
#include "state.h"

#include "common/digest.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAX (256 * 1024) /* 16 help requests and a note each, and room */

struct vnc_state {
	char *path;     /* NULL: keep nothing */
	char origin[65]; /* of the secret this process was started with ("" none) */
	char *secret;   /* an earlier run's rekeyed secret for this start, or NULL */
	json_t *lease;  /* an earlier run's lease, or NULL */
	char *last;     /* the text last written (or read) */
};

/* Names a secret without holding it: HMAC-SHA256 under the secret. */
static void origin_of(const char *secret, char out[65])
{
	static const char what[] = "cloche-vnc state origin";
	unsigned char mac[32];

	out[0] = '\0';
	if (secret && digest_hmac_sha256(secret, strlen(secret), what, sizeof(what) - 1, mac) == 0)
		util_hex(mac, sizeof(mac), out);
}

static void take_up(struct vnc_state *st, json_t *j)
{
	const char *origin = json_string_value(json_object_get(j, "origin"));
	const char *secret = json_string_value(json_object_get(j, "secret"));
	json_t *lease = json_object_get(j, "lease");

	if (json_integer_value(json_object_get(j, "v")) != 1) {
		log_warn("the state of an earlier run is not cloche-vnc's: ignored", "{s:s}", "path",
			 st->path);
		return;
	}
	if (secret && origin && st->origin[0] && strcmp(origin, st->origin) == 0)
		st->secret = strdup(secret);
	if (json_is_object(lease))
		st->lease = json_incref(lease);
}

struct vnc_state *vnc_state_open(const char *dir, const char *started, struct err *e)
{
	struct vnc_state *st = calloc(1, sizeof(*st));
	struct err le = ERR_INIT;
	json_t *j;

	if (!st || (dir && asprintf(&st->path, "%s/state.json", dir) == -1)) {
		free(st);
		return err_set(e, ENOMEM, "state"), NULL;
	}
	if (!dir)
		return st;
	origin_of(started, st->origin);
	j = cj_load_file(st->path, STATE_MAX, &le);
	if (j) {
		take_up(st, j);
		st->last = cj_dump(j);
		json_decref(j);
	} else if (le.code != ENOENT) {
		log_warn("cannot read the state of an earlier run: starting afresh", "{s:s}", "error",
			 le.msg);
	}
	return st;
}

const char *vnc_state_secret(const struct vnc_state *st)
{
	return st->secret;
}

const json_t *vnc_state_lease(const struct vnc_state *st)
{
	return st->lease;
}

int vnc_state_save(struct vnc_state *st, const char *secret, const struct vnc_lease *l,
		   struct err *e)
{
	AUTOJSON json_t *j = NULL;
	char *text;

	if (!st->path)
		return 0;
	j = json_pack("{s:i, s:s, s:s?, s:o?}", "v", 1, "origin", st->origin, "secret",
		      secret && *secret ? secret : NULL, "lease", l ? vnc_lease_save_json(l) : NULL);
	text = j ? cj_dump(j) : NULL;
	if (!text)
		return err_set(e, ENOMEM, "state");
	if (st->last && strcmp(text, st->last) == 0) {
		free(text);
		return 0;
	}
	if (cj_save_file(st->path, j, 0600, e) == -1) {
		free(text);
		return -1;
	}
	free(st->last);
	st->last = text;
	return 0;
}

void vnc_state_free(struct vnc_state *st)
{
	if (!st)
		return;
	if (st->secret)
		explicit_bzero(st->secret, strlen(st->secret));
	free(st->secret);
	if (st->last)
		explicit_bzero(st->last, strlen(st->last));
	free(st->last);
	json_decref(st->lease);
	free(st->path);
	free(st);
}
