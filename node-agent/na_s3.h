/* The node agent's S3 client: the only file that speaks S3.
 *
 * Objects of one bucket on any S3 API (AWS, MinIO, Ceph, s3rver), addressed
 * path-style as {endpoint}/{bucket}/{key}.  Every request is signed here
 * with AWS Signature Version 4, and the signature covers the real SHA-256
 * of the payload (x-amz-content-sha256), so a server that checks signatures
 * also checks the bytes it stores.  A request that fails on the network or
 * with 5xx or 429 is sent again after a delay that doubles each time; files
 * larger than a part go up as multipart uploads.  A dead server cannot hang
 * a caller: connecting gives up after 5 s and a transfer slower than 1 KiB/s
 * for stall_s seconds is abandoned (and retried).
 *
 * Errors read "s3 PUT ckpt/x: 403 SignatureDoesNotMatch": the operation,
 * bucket/key, the HTTP status and S3's own <Code>, with e->http_status 502
 * (404 for a missing object).  No error message and no log line carries the
 * secret key or a signature.  One struct na_s3 may be used by several
 * threads at once; each call has its own connection. */
#ifndef NA_S3_H
#define NA_S3_H

#include "common/buf.h"
#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

#define NA_S3_PART_MIN (5LL << 20) /* S3's smallest part (but the last) */
#define NA_S3_PART_DEFAULT (16LL << 20)
#define NA_S3_PARTS_MAX 10000 /* S3's most parts in one upload */

struct na_s3_opts {
	const char *endpoint; /* "http(s)://host[:port]", no path */
	const char *bucket;
	const char *region; /* NULL or "": "us-east-1" */
	const char *access_key;
	const char *secret_key;
	int attempts;        /* tries per request; 0: 5 */
	int backoff_ms;      /* delay before the first retry, doubled after each; 0: 200 */
	long long part_size; /* multipart part size; 0: 16 MiB; at least 5 MiB */
	int stall_s;         /* abandon a transfer under 1 KiB/s for this long; 0: 30 */
	int list_page;       /* keys per ListObjectsV2 page (max-keys); 0: 1000 */
};

struct na_s3;

/* Makes a client; the options are copied (o need not outlive it).  NULL
 * with e set when an option is missing or malformed (an endpoint that is not
 * http(s)://host[:port], a part size under 5 MiB, ...). */
struct na_s3 *na_s3_new(const struct na_s3_opts *o, struct err *e);

/* Frees s (NULL is allowed) and wipes its copy of the secret key. */
void na_s3_free(struct na_s3 *s);

/* Uploads the regular file at path as key: one PUT when it is at most a
 * part, else a multipart upload (initiate, one PUT per part, complete; on
 * failure the upload is aborted so no parts are left billed).  Each part's
 * SHA-256 is computed from the file before it is sent.  When the file would
 * need more than 10000 parts the part size grows to fit.  0 or -1. */
int na_s3_put_file(struct na_s3 *s, const char *key, const char *path, struct err *e);

/* Uploads len bytes at data as key in one PUT (for manifests and other
 * small objects).  0 or -1. */
int na_s3_put_mem(struct na_s3 *s, const char *key, const void *data, size_t len, struct err *e);

/* Downloads key into the file at path (created mode 0600 or truncated),
 * then fsyncs it.  A retry starts the file again from empty.  On failure
 * path may hold part of the object: download to a temporary name and
 * rename it when the whole object is wanted atomically.  0 or -1 (a
 * missing key: e->http_status 404). */
int na_s3_get_file(struct na_s3 *s, const char *key, const char *path, struct err *e);

/* Downloads key into out, which is emptied first and may grow to max bytes
 * (a larger object fails with e->code E2BIG, and is not retried).  0 or -1
 * (a missing key: e->http_status 404). */
int na_s3_get_mem(struct na_s3 *s, const char *key, struct buf *out, size_t max, struct err *e);

/* Stores key's size in *size (may be NULL).  0, or -1 with e set; for a
 * missing key e->http_status is 404. */
int na_s3_head(struct na_s3 *s, const char *key, long long *size, struct err *e);

/* Deletes key; a key that does not exist is success.  0 or -1. */
int na_s3_delete(struct na_s3 *s, const char *key, struct err *e);

/* Called by na_s3_list() for each key, in S3's order (UTF-8 byte order),
 * with the key entity-decoded.  Returns 0 to go on; any other value ends the
 * walk and na_s3_list() returns it as it is. */
typedef int (*na_s3_list_fn)(const char *key, long long size, void *ud);

/* Calls fn for every key that starts with prefix ("" or NULL: all), page by
 * page (ListObjectsV2 with continuation tokens).  fn may delete the key it
 * is given.  Returns 0 when all were seen, fn's non-zero value when fn
 * stopped the walk, or -1 with e set. */
int na_s3_list(struct na_s3 *s, const char *prefix, na_s3_list_fn fn, void *ud, struct err *e);

/* Deletes every key that starts with prefix, which must not be empty (that
 * would be the whole bucket).  Returns how many keys were deleted, or -1. */
long long na_s3_delete_prefix(struct na_s3 *s, const char *prefix, struct err *e);

/* `cloche-node s3 CMD ...`: put KEY FILE | get KEY FILE | head KEY | rm KEY |
 * ls [PREFIX] | rm-prefix PREFIX, configured from the environment
 * (CLOCHE_S3_ENDPOINT, _BUCKET, _REGION, _ACCESS_KEY and _SECRET_KEY, the
 * last two falling back to AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY;
 * CLOCHE_S3_PART_SIZE, _ATTEMPTS, _BACKOFF_MS, _STALL_SECONDS, _LIST_PAGE).
 * argv[0] is "s3".  Returns the exit status: 0 done, 1 failed (one line on
 * stderr), 2 usage or configuration error. */
int na_s3_cli_main(int argc, char *const *argv);

/* The parts below are pure functions, exposed for the known-answer tests. */

/* One header to sign: the name in any case, the value as sent. */
struct na_s3_header {
	const char *name;
	const char *value;
};

/* One query parameter, not yet encoded. */
struct na_s3_param {
	const char *name;
	const char *value; /* "" for a parameter without a value (`?uploads`) */
};

/* Everything Signature Version 4 signs. */
struct na_s3_sig {
	const char *method;                 /* "GET", "PUT", ... */
	const char *uri;                    /* canonical URI: the path as sent, encoded */
	const char *query;                  /* canonical query (na_s3_query()); "" for none */
	const struct na_s3_header *headers; /* the headers to sign, host and x-amz-* too */
	size_t nheaders;
	const char *payload_hash; /* as in x-amz-content-sha256 */
	const char *amz_date;     /* "20130524T000000Z", as in x-amz-date */
	const char *region;
	const char *service; /* "s3" */
	const char *access_key;
	const char *secret_key;
};

/* Appends to auth the Authorization header's value, "AWS4-HMAC-SHA256
 * Credential=<key>/<date>/<region>/<service>/aws4_request,SignedHeaders=
 * <names>,Signature=<hex>".  Header names are lower-cased and sorted, values
 * trimmed with inner runs of spaces folded to one; several headers of one
 * name are joined with ','.  canonical and to_sign (each may be NULL)
 * receive the canonical request and the string to sign; neither holds a
 * secret.  0, or -1 with e set (a buffer's limit, a crypto failure). */
int na_s3_sign(const struct na_s3_sig *sig, struct buf *auth, struct buf *canonical,
	       struct buf *to_sign, struct err *e);

/* Appends s percent-encoded as SigV4 wants: every byte but A-Z a-z 0-9
 * '-' '.' '_' '~' becomes %XX with upper-case hex, except '/' when
 * keep_slash (object keys in paths).  0 or -1 (the buffer's limit). */
int na_s3_uri_encode(const char *s, bool keep_slash, struct buf *out, struct err *e);

/* Appends the canonical query string of n parameters: names and values
 * encoded, sorted by encoded name (then value), "name=value" joined by '&',
 * with '=' even for an empty value.  0 or -1. */
int na_s3_query(const struct na_s3_param *p, size_t n, struct buf *out, struct err *e);

/* Walks one ListObjectsV2 answer (xml, len bytes): calls fn for each
 * <Contents> with its decoded <Key> and <Size>; *truncated says whether
 * <IsTruncated> is true, and token (emptied first) receives the decoded
 * <NextContinuationToken>.  Returns 0, fn's non-zero value, or -1 with e
 * set when the answer is malformed. */
int na_s3_parse_list(const char *xml, size_t len, na_s3_list_fn fn, void *ud, bool *truncated,
		     struct buf *token, struct err *e);

#endif
