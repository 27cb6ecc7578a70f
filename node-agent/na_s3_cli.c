/* `cloche-node s3 ...`: an operator's hands on the checkpoint bucket, through
 * the same client the agent uses (na_s3), configured from the environment
 * so that credentials never show in a process list. */
#include "node-agent/na_s3.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: cloche-node s3 COMMAND\n"
	"  put KEY FILE       upload FILE (multipart above CLOCHE_S3_PART_SIZE)\n"
	"  get KEY FILE       download into FILE (created or truncated)\n"
	"  head KEY           print the object's size in bytes\n"
	"  rm KEY             delete the object (a missing one is fine)\n"
	"  ls [PREFIX]        print \"SIZE<tab>KEY\" for each object under PREFIX\n"
	"  rm-prefix PREFIX   delete every object under PREFIX, print how many\n"
	"environment: CLOCHE_S3_ENDPOINT (http(s)://host[:port]), CLOCHE_S3_BUCKET,\n"
	"  CLOCHE_S3_REGION (us-east-1), CLOCHE_S3_ACCESS_KEY and CLOCHE_S3_SECRET_KEY\n"
	"  (else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); tuning: CLOCHE_S3_PART_SIZE\n"
	"  (bytes, or with K/M/G), CLOCHE_S3_ATTEMPTS, CLOCHE_S3_BACKOFF_MS,\n"
	"  CLOCHE_S3_STALL_SECONDS, CLOCHE_S3_LIST_PAGE\n"
	"exit status: 0 done, 1 failed, 2 usage or configuration\n";

/* The first of two variables that is set and not empty, or NULL. */
static const char *env_either(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	if ((!v || !*v) && fallback)
		v = getenv(fallback);
	return v && *v ? v : NULL;
}

/* Reads number variable name into *out (left alone when unset); a size may
 * end in K, M or G.  0, or -1 after saying what is wrong on stderr. */
static int env_number(const char *name, bool size, long long max, long long *out)
{
	const char *v = getenv(name);
	char *end;
	long long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (size && *end && !end[1]) {
		int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : -1;

		if (shift > 0 && n >= 0 && n <= LLONG_MAX >> shift) {
			n <<= shift;
			end++;
		}
	}
	if (errno || end == v || *end || n < 0 || n > max) {
		fprintf(stderr, "cloche-node s3: %s=`%s` is not a %s up to %lld\n", name, v,
			size ? "size" : "number", max);
		return -1;
	}
	*out = n;
	return 0;
}

static int cli_ls_one(const char *key, long long size, void *ud)
{
	(void)ud;
	return printf("%lld\t%s\n", size, key) < 0 ? 1 : 0;
}

static int cli_run(struct na_s3 *s, const char *cmd, char *const *a, struct err *e)
{
	long long n;
	int rc;

	if (strcmp(cmd, "put") == 0)
		return na_s3_put_file(s, a[0], a[1], e);
	if (strcmp(cmd, "get") == 0)
		return na_s3_get_file(s, a[0], a[1], e);
	if (strcmp(cmd, "rm") == 0)
		return na_s3_delete(s, a[0], e);
	if (strcmp(cmd, "head") == 0) {
		if (na_s3_head(s, a[0], &n, e) == -1)
			return -1;
		printf("%lld\n", n);
		return 0;
	}
	if (strcmp(cmd, "rm-prefix") == 0) {
		n = na_s3_delete_prefix(s, a[0], e);
		if (n < 0)
			return -1;
		printf("%lld\n", n);
		return 0;
	}
	rc = na_s3_list(s, a[0], cli_ls_one, NULL, e);
	if (rc > 0)
		return err_set(e, errno, "write the listing");
	return rc;
}

int na_s3_cli_main(int argc, char *const *argv)
{
	static const struct {
		const char *name;
		int min, max; /* arguments after the command */
	} cmds[] = {{"put", 2, 2}, {"get", 2, 2}, {"head", 1, 1},
		    {"rm", 1, 1},  {"ls", 0, 1},  {"rm-prefix", 1, 1}};
	struct na_s3_opts o = {0};
	struct err e = ERR_INIT;
	struct na_s3 *s;
	long long part = 0, attempts = 0, backoff = 0, stall = 0, page = 0;
	char *args[2] = {NULL, NULL};
	size_t i;
	int rc;

	for (i = 0; argc >= 2 && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			break;
	if (argc < 2 || i == sizeof(cmds) / sizeof(cmds[0]) || argc - 2 < cmds[i].min ||
	    argc - 2 > cmds[i].max) {
		fputs(usage_text, stderr);
		return 2;
	}
	for (int k = 0; k < argc - 2; k++)
		args[k] = argv[2 + k];
	o.endpoint = env_either("CLOCHE_S3_ENDPOINT", NULL);
	o.bucket = env_either("CLOCHE_S3_BUCKET", NULL);
	o.region = env_either("CLOCHE_S3_REGION", NULL);
	o.access_key = env_either("CLOCHE_S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID");
	o.secret_key = env_either("CLOCHE_S3_SECRET_KEY", "AWS_SECRET_ACCESS_KEY");
	if (!o.endpoint || !o.bucket || !o.access_key || !o.secret_key) {
		fprintf(stderr, "cloche-node s3: set CLOCHE_S3_ENDPOINT, CLOCHE_S3_BUCKET and the "
				"keys (CLOCHE_S3_ACCESS_KEY/CLOCHE_S3_SECRET_KEY or "
				"AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)\n");
		return 2;
	}
	if (env_number("CLOCHE_S3_PART_SIZE", true, 5LL << 30, &part) == -1 ||
	    env_number("CLOCHE_S3_ATTEMPTS", false, 100, &attempts) == -1 ||
	    env_number("CLOCHE_S3_BACKOFF_MS", false, 60000, &backoff) == -1 ||
	    env_number("CLOCHE_S3_STALL_SECONDS", false, 3600, &stall) == -1 ||
	    env_number("CLOCHE_S3_LIST_PAGE", false, 1000, &page) == -1)
		return 2;
	o.part_size = part;
	o.attempts = (int)attempts;
	o.backoff_ms = (int)backoff;
	o.stall_s = (int)stall;
	o.list_page = (int)page;
	s = na_s3_new(&o, &e);
	if (!s) {
		fprintf(stderr, "cloche-node s3: %s\n", e.msg);
		return 2;
	}
	rc = cli_run(s, argv[1], args, &e);
	na_s3_free(s);
	if (rc == 0 && fflush(stdout) == EOF)
		rc = err_set(&e, errno, "write to stdout");
	if (rc != 0) {
		fprintf(stderr, "cloche-node s3 %s: %s\n", argv[1], e.msg);
		return 1;
	}
	return 0;
}
