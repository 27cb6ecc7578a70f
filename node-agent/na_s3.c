/* S3 over libcurl, signed by our own Signature Version 4 code; see na_s3.h.
 *
 * A request is a struct s3_req: method, key (or the bucket itself), query
 * parameters, a body taken from memory or from a range of a file, and where
 * the body of a 2xx answer goes (a bounded buffer, a file, or nowhere).
 * s3_send() signs it afresh for every attempt (x-amz-date moves on), tries
 * again where a later attempt may succeed, and turns the last failure into
 * one sentence.  A public call uses one curl easy handle for all of its
 * requests, so a multipart upload keeps its connection; calls share nothing
 * but curl's global state, which is set up once. */
#include "node-agent/na_s3.h"

#include "common/digest.h"
#include "common/log.h"
#include "common/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S3_CONNECT_TIMEOUT_MS 5000L
#define S3_LOW_SPEED 1024L /* bytes/s under which a transfer stalls */
#define S3_BACKOFF_MAX_MS 20000
#define S3_ERRBODY_MAX (16u << 10) /* what is kept of an error answer */
#define S3_XML_MAX (16u << 20)     /* a list page, the completion document */
#define S3_KEY_MAX 1024            /* S3's longest key, in bytes */
#define S3_HASH_CHUNK (1u << 20)
#define S3_SIGNED_MAX 32 /* headers one signature may cover */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct na_s3 {
	char *endpoint; /* "http://host:port" as given, without trailing '/' */
	char *host;     /* the Host header: the port only when not the scheme's */
	char *bucket;
	char *region;
	char *access_key;
	char *secret_key;
	int attempts;
	int backoff_ms;
	int stall_s;
	int list_page;
	long long part_size;
};

/* One request; s3_req_init() gives the defaults. */
struct s3_req {
	const char *method;
	const char *key;  /* NULL: the bucket itself */
	const char *what; /* NULL, or what it is for messages ("part 2 of 9") */
	const struct na_s3_param *params;
	size_t nparams;
	bool body; /* sends len bytes from mem, or from fd at off */
	const void *mem;
	int fd;
	long long off, len;
	char sha[65];     /* hex SHA-256 of the body */
	struct buf *out;  /* a 2xx answer's body goes here, */
	int out_fd;       /* or here (from offset 0), or nowhere */
	bool completion;  /* CompleteMultipartUpload (answers 200 with <Error>, thinks long) */
	long status;      /* filled in: the last answer's status, */
	char code[64];    /* S3's <Code> in it ("" when none), */
	char etag[128];   /* its ETag, */
	long long length; /* its Content-Length (-1: not said), */
	int tries;        /* and how many attempts were made */
};

/* What curl's callbacks share with one attempt. */
struct s3_io {
	struct s3_req *r;
	CURL *h;
	long long pos;      /* body bytes handed to curl */
	struct buf errbody; /* a non-2xx answer, cut at S3_ERRBODY_MAX */
	struct err err;     /* why a callback stopped the transfer */
	bool failed;
};

static pthread_once_t s3_once = PTHREAD_ONCE_INIT;
static CURLcode s3_init_rc;

static void s3_global_init(void)
{
	s3_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void s3_curlp(CURL **h)
{
	if (*h)
		curl_easy_cleanup(*h);
}
#define AUTOCURL __attribute__((cleanup(s3_curlp)))

/* ---- Signature Version 4 ---- */

int na_s3_uri_encode(const char *s, bool keep_slash, struct buf *out, struct err *e)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *run = s;

	for (;; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[3];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/'))
			continue;
		if (s > run && buf_append(out, run, (size_t)(s - run), e) == -1)
			return -1;
		if (!c)
			return 0;
		esc[0] = '%';
		esc[1] = hex[c >> 4];
		esc[2] = hex[c & 15];
		if (buf_append(out, esc, 3, e) == -1)
			return -1;
		run = s + 1;
	}
}

struct s3_qpair {
	char *name;
	char *value;
};

static int s3_qpair_cmp(const void *a, const void *b)
{
	const struct s3_qpair *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

int na_s3_query(const struct na_s3_param *p, size_t n, struct buf *out, struct err *e)
{
	struct s3_qpair *q = calloc(n ? n : 1, sizeof(*q));
	struct buf t = BUF_INIT(64u << 10);
	size_t i, made;
	int r = -1;

	if (!q)
		return err_set(e, ENOMEM, "canonical query");
	for (made = 0; made < n; made++) {
		if (na_s3_uri_encode(p[made].name, false, &t, e) == -1)
			goto out;
		q[made].name = buf_take(&t, NULL);
		if (na_s3_uri_encode(p[made].value ? p[made].value : "", false, &t, e) == -1) {
			free(q[made].name);
			goto out;
		}
		q[made].value = buf_take(&t, NULL);
		if (!q[made].name || !q[made].value) {
			free(q[made].name);
			free(q[made].value);
			err_set(e, ENOMEM, "canonical query");
			goto out;
		}
	}
	qsort(q, n, sizeof(*q), s3_qpair_cmp);
	for (i = 0; i < n; i++)
		if (buf_appendf(out, e, "%s%s=%s", i ? "&" : "", q[i].name, q[i].value) == -1)
			goto out;
	r = 0;
out:
	for (i = 0; i < made; i++) {
		free(q[i].name);
		free(q[i].value);
	}
	free(q);
	buf_free(&t);
	return r;
}

static int s3_header_cmp(const void *a, const void *b)
{
	const struct na_s3_header *const *x = a, *const *y = b;
	int c = strcasecmp((*x)->name, (*y)->name);

	/* Headers of one name keep their order: qsort is not stable. */
	return c ? c : (*x > *y) - (*x < *y);
}

/* Appends a header value trimmed, inner runs of blanks folded to one space. */
static int s3_trimmed(struct buf *out, const char *v, struct err *e)
{
	bool blank = false, any = false;

	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			blank = any;
			continue;
		}
		if ((blank && buf_append(out, " ", 1, e) == -1) || buf_append(out, v, 1, e) == -1)
			return -1;
		blank = false;
		any = true;
	}
	return 0;
}

static int s3_lower(struct buf *out, const char *s, struct err *e)
{
	for (; *s; s++) {
		char c = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);

		if (buf_append(out, &c, 1, e) == -1)
			return -1;
	}
	return 0;
}

static int s3_sha256_hex(const void *p, size_t n, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
		return -1;
	util_hex(md, 32, hex);
	return 0;
}

/* The signature of to_sign with the key derived from the secret for one
 * day, region and service: the HMAC chain "AWS4"+secret -> date -> region
 * -> service -> "aws4_request" -> string to sign. */
static int s3_signature(const struct na_s3_sig *sig, const char *date8, const struct buf *to_sign,
			char hex[65])
{
	unsigned char k[32], k2[32];
	char secret[260];
	int n = snprintf(secret, sizeof(secret), "AWS4%s", sig->secret_key);
	int r = -1;

	if (n < 0 || (size_t)n >= sizeof(secret))
		goto out;
	if (digest_hmac_sha256(secret, (size_t)n, date8, 8, k) == -1 ||
	    digest_hmac_sha256(k, 32, sig->region, strlen(sig->region), k2) == -1 ||
	    digest_hmac_sha256(k2, 32, sig->service, strlen(sig->service), k) == -1 ||
	    digest_hmac_sha256(k, 32, "aws4_request", 12, k2) == -1 ||
	    digest_hmac_sha256(k2, 32, to_sign->data, to_sign->len, k) == -1)
		goto out;
	util_hex(k, 32, hex);
	r = 0;
out:
	OPENSSL_cleanse(secret, sizeof(secret));
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(k2, sizeof(k2));
	return r;
}

int na_s3_sign(const struct na_s3_sig *sig, struct buf *auth, struct buf *canonical,
	       struct buf *to_sign, struct err *e)
{
	const struct na_s3_header *sorted[S3_SIGNED_MAX];
	struct buf cr = BUF_INIT(1u << 20), sts = BUF_INIT(4096), names = BUF_INIT(4096);
	char hash[65], sighex[65];
	size_t i;
	int r = -1;

	if (sig->nheaders > S3_SIGNED_MAX)
		return err_set(e, E2BIG, "sign: more than %d headers", S3_SIGNED_MAX);
	if (strlen(sig->amz_date) != 16 || sig->amz_date[8] != 'T')
		return err_set(e, EINVAL, "sign: `%s` is not an x-amz-date", sig->amz_date);
	for (i = 0; i < sig->nheaders; i++)
		sorted[i] = &sig->headers[i];
	qsort(sorted, sig->nheaders, sizeof(sorted[0]), s3_header_cmp);

	if (buf_appendf(&cr, e, "%s\n%s\n%s\n", sig->method, sig->uri, sig->query) == -1)
		goto out;
	for (i = 0; i < sig->nheaders; i++) {
		bool again = i > 0 && strcasecmp(sorted[i]->name, sorted[i - 1]->name) == 0;

		if (again) { /* a second header of one name: its value joins the line */
			cr.data[--cr.len] = '\0';
			if (buf_append(&cr, ",", 1, e) == -1)
				goto out;
		} else if ((i && buf_append(&names, ";", 1, e) == -1) ||
			   s3_lower(&names, sorted[i]->name, e) == -1 ||
			   s3_lower(&cr, sorted[i]->name, e) == -1 ||
			   buf_append(&cr, ":", 1, e) == -1) {
			goto out;
		}
		if (s3_trimmed(&cr, sorted[i]->value, e) == -1 || buf_append(&cr, "\n", 1, e) == -1)
			goto out;
	}
	if (buf_appendf(&cr, e, "\n%s\n%s", buf_str(&names), sig->payload_hash) == -1)
		goto out;
	if (s3_sha256_hex(cr.data, cr.len, hash) == -1) {
		err_set(e, 0, "sign: SHA-256 failed");
		goto out;
	}
	if (buf_appendf(&sts, e, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s", sig->amz_date,
			sig->amz_date, sig->region, sig->service, hash) == -1)
		goto out;
	if (s3_signature(sig, sig->amz_date, &sts, sighex) == -1) {
		err_set(e, 0, "sign: HMAC failed (is the secret key longer than 255 bytes?)");
		goto out;
	}
	if (buf_appendf(auth, e,
			"AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request,SignedHeaders=%s,"
			"Signature=%s",
			sig->access_key, sig->amz_date, sig->region, sig->service, buf_str(&names),
			sighex) == -1)
		goto out;
	if ((canonical && buf_append(canonical, cr.data, cr.len, e) == -1) ||
	    (to_sign && buf_append(to_sign, sts.data, sts.len, e) == -1))
		goto out;
	r = 0;
out:
	buf_free(&cr);
	buf_free(&sts);
	buf_free(&names);
	return r;
}

/* ---- the little XML S3 answers with ---- */

struct s3_span {
	const char *p;
	size_t n;
};

/* Finds the first element named tag in [p, end): *in receives its content
 * (empty for <tag/>).  Returns where the element ends, or NULL when there is
 * none.  Enough for S3's answers, whose elements of interest never nest in
 * one of the same name and whose text never holds a raw '<'. */
static const char *s3_xml_find(const char *p, const char *end, const char *tag, struct s3_span *in)
{
	size_t tl = strlen(tag);
	const char *q, *gt, *c;

	while (p && p < end && (p = memchr(p, '<', (size_t)(end - p)))) {
		p++;
		if ((size_t)(end - p) <= tl || memcmp(p, tag, tl) != 0)
			continue;
		q = p + tl;
		if (*q != '>' && *q != '/' && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n')
			continue;
		gt = memchr(q, '>', (size_t)(end - q));
		if (!gt)
			return NULL;
		if (gt[-1] == '/') {
			in->p = gt + 1;
			in->n = 0;
			return gt + 1;
		}
		for (c = gt + 1; c < end && (c = memmem(c, (size_t)(end - c), "</", 2)); c += 2) {
			if ((size_t)(end - c) > tl + 2 && memcmp(c + 2, tag, tl) == 0 &&
			    c[2 + tl] == '>') {
				in->p = gt + 1;
				in->n = (size_t)(c - in->p);
				return c + 3 + tl;
			}
		}
		return NULL;
	}
	return NULL;
}

/* Appends code point cp as UTF-8. */
static int s3_utf8(struct buf *out, unsigned long cp, struct err *e)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_append(out, u, n, e);
}

/* Replaces out's contents with the text of in, its entities decoded: the
 * five named ones and &#N; / &#xH; (not NUL, not a surrogate). */
static int s3_xml_text(struct s3_span in, struct buf *out, struct err *e)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
	const char *p = in.p, *end = in.p + in.n, *amp, *semi;

	buf_reset(out);
	if (buf_append(out, "", 0, e) == -1)
		return -1;
	while (p < end) {
		size_t i, nl;
		unsigned long cp = 0;
		char *stop;

		amp = memchr(p, '&', (size_t)(end - p));
		if (!amp)
			amp = end;
		if (memchr(p, '<', (size_t)(amp - p)))
			return err_set(e, 0, "markup inside a text element");
		if (buf_append(out, p, (size_t)(amp - p), e) == -1)
			return -1;
		if (amp == end)
			break;
		semi = memchr(amp, ';', (size_t)(end - amp));
		if (!semi || semi - amp > 12)
			return err_set(e, 0, "an unterminated entity");
		nl = (size_t)(semi - amp - 1);
		for (i = 0; i < ARRAY_LEN(named); i++)
			if (strlen(named[i].name) == nl && memcmp(amp + 1, named[i].name, nl) == 0)
				break;
		if (i < ARRAY_LEN(named)) {
			if (buf_append(out, &named[i].c, 1, e) == -1)
				return -1;
		} else if (nl >= 2 && amp[1] == '#') {
			char num[12];
			bool hexa = amp[2] == 'x';

			memcpy(num, amp + 2 + hexa, nl - 1 - hexa);
			num[nl - 1 - hexa] = '\0';
			errno = 0;
			stop = num;
			if (hexa ? util_hexval(num[0]) >= 0 : num[0] >= '0' && num[0] <= '9')
				cp = strtoul(num, &stop, hexa ? 16 : 10);
			if (errno || *stop || cp == 0 || cp > 0x10ffff ||
			    (cp >= 0xd800 && cp <= 0xdfff))
				return err_set(e, 0, "a bad character reference");
			if (s3_utf8(out, cp, e) == -1)
				return -1;
		} else {
			return err_set(e, 0, "an unknown entity");
		}
		p = semi + 1;
	}
	return 0;
}

int na_s3_parse_list(const char *xml, size_t len, na_s3_list_fn fn, void *ud, bool *truncated,
		     struct buf *token, struct err *e)
{
	struct buf key = BUF_INIT(4 * S3_KEY_MAX);
	struct s3_span root, c, k, sz, t;
	const char *p, *end;
	int r = -1;

	*truncated = false;
	buf_reset(token);
	if (!xml || !s3_xml_find(xml, xml + len, "ListBucketResult", &root))
		return err_set(e, 0, "the answer is not a ListBucketResult");
	for (p = root.p, end = root.p + root.n; (p = s3_xml_find(p, end, "Contents", &c));) {
		char num[24], *stop = num;
		long long size;

		if (!s3_xml_find(c.p, c.p + c.n, "Key", &k)) {
			err_set(e, 0, "an entry without a <Key>");
			goto out;
		}
		if (s3_xml_text(k, &key, e) == -1) {
			err_wrap(e, "<Key>");
			goto out;
		}
		if (!s3_xml_find(c.p, c.p + c.n, "Size", &sz) || !sz.n || sz.n >= sizeof(num)) {
			err_set(e, 0, "`%s` has no <Size>", buf_str(&key));
			goto out;
		}
		memcpy(num, sz.p, sz.n);
		num[sz.n] = '\0';
		errno = 0;
		size = num[0] >= '0' && num[0] <= '9' ? strtoll(num, &stop, 10) : -1;
		if (errno || size < 0 || *stop) {
			err_set(e, 0, "`%s` has a bad <Size>", buf_str(&key));
			goto out;
		}
		r = fn(buf_str(&key), size, ud);
		if (r != 0)
			goto out;
	}
	if (s3_xml_find(root.p, end, "IsTruncated", &t))
		*truncated = t.n == 4 && memcmp(t.p, "true", 4) == 0;
	if (s3_xml_find(root.p, end, "NextContinuationToken", &t) &&
	    s3_xml_text(t, token, e) == -1) {
		err_wrap(e, "<NextContinuationToken>");
		goto out;
	}
	r = 0;
out:
	buf_free(&key);
	return r;
}

/* S3's <Code> from an error answer, or "" when it has none (HEAD answers
 * carry no body).  Only a plain word is kept: it ends up in messages. */
static void s3_error_code(const struct buf *body, char *out, size_t cap)
{
	struct s3_span c;

	out[0] = '\0';
	if (!body->len || !s3_xml_find(body->data, body->data + body->len, "Code", &c) || !c.n ||
	    c.n >= cap)
		return;
	for (size_t i = 0; i < c.n; i++) {
		char ch = c.p[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			return;
	}
	memcpy(out, c.p, c.n);
	out[c.n] = '\0';
}

/* ---- requests ---- */

static void s3_req_init(struct s3_req *r, const char *method, const char *key)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->key = key;
	r->fd = -1;
	r->out_fd = -1;
	r->length = -1;
	memcpy(r->sha, S3_EMPTY_SHA256, sizeof(r->sha));
}

static size_t s3_on_read(char *p, size_t size, size_t n, void *data)
{
	struct s3_io *io = data;
	struct s3_req *r = io->r;
	long long left = r->len - io->pos;
	size_t want = size * n;
	ssize_t got;

	if (left <= 0)
		return 0;
	if ((long long)want > left)
		want = (size_t)left;
	if (r->mem) {
		memcpy(p, (const char *)r->mem + io->pos, want);
		io->pos += (long long)want;
		return want;
	}
	do
		got = pread(r->fd, p, want, (off_t)(r->off + io->pos));
	while (got == -1 && errno == EINTR);
	if (got <= 0) {
		err_set(&io->err, got == -1 ? errno : 0, "read the file%s",
			got == -1 ? "" : ": it shrank while being sent");
		io->failed = true;
		return CURL_READFUNC_ABORT;
	}
	io->pos += got;
	return (size_t)got;
}

static int s3_on_seek(void *data, curl_off_t off, int origin)
{
	struct s3_io *io = data;

	if (origin != SEEK_SET || off < 0 || off > io->r->len)
		return CURL_SEEKFUNC_FAIL;
	io->pos = off;
	return CURL_SEEKFUNC_OK;
}

static size_t s3_on_write(char *p, size_t size, size_t n, void *data)
{
	struct s3_io *io = data;
	size_t len = size * n;
	long status = 0;

	curl_easy_getinfo(io->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		size_t room = io->errbody.max - io->errbody.len;

		(void)buf_append(&io->errbody, p, len < room ? len : room, NULL);
		return len;
	}
	if (io->r->out_fd >= 0 && util_write_all(io->r->out_fd, p, len) == -1) {
		err_set(&io->err, errno, "write the file");
		io->failed = true;
		return 0;
	}
	if (io->r->out && buf_append(io->r->out, p, len, &io->err) == -1) {
		err_wrap(&io->err, "the object");
		io->failed = true;
		return 0;
	}
	return len;
}

/* Keeps the ETag of the last answer (a status line starts a new one). */
static size_t s3_on_header(char *p, size_t size, size_t n, void *data)
{
	struct s3_req *r = ((struct s3_io *)data)->r;
	size_t len = size * n, vl;
	const char *v, *end = p + len;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0)
		r->etag[0] = '\0';
	if (len < 5 || strncasecmp(p, "etag:", 5) != 0)
		return len;
	for (v = p + 5; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	vl = (size_t)(end - v);
	if (vl < sizeof(r->etag)) {
		memcpy(r->etag, v, vl);
		r->etag[vl] = '\0';
	}
	return len;
}

static bool s3_curl_retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_OUT_OF_MEMORY:
	case CURLE_BAD_FUNCTION_ARGUMENT:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return false;
	default:
		return true;
	}
}

/* Appends "Name: value" to the header list.  0 or -1 (out of memory). */
static int s3_hdr(struct curl_slist **l, struct buf *tmp, const char *name, const char *value)
{
	struct curl_slist *n;

	buf_reset(tmp);
	if (buf_appendf(tmp, NULL, "%s: %s", name, value) == -1)
		return -1;
	n = curl_slist_append(*l, buf_str(tmp));
	if (!n)
		return -1;
	*l = n;
	return 0;
}

/* Sends r once.  Returns 0 when an answer arrived (r->status), or -1 with
 * why set when none did; *retry then says whether another try may help. */
static int s3_attempt(struct na_s3 *s, CURL *h, struct s3_req *r, struct s3_io *io, struct err *why,
		      bool *retry)
{
	struct buf path = BUF_INIT(8192), query = BUF_INIT(64u << 10), url = BUF_INIT(80u << 10);
	struct buf auth = BUF_INIT(4096), tmp = BUF_INIT(80u << 10);
	struct curl_slist *hdrs = NULL;
	char detail[CURL_ERROR_SIZE] = "", date[17];
	struct na_s3_header signed_hdrs[] = {
		{"host", s->host}, {"x-amz-content-sha256", r->sha}, {"x-amz-date", date}};
	struct na_s3_sig sig = {r->method,    NULL, NULL,      signed_hdrs, ARRAY_LEN(signed_hdrs),
				r->sha,       date, s->region, "s3",        s->access_key,
				s->secret_key};
	time_t now = time(NULL);
	struct tm tm;
	CURLcode rc;
	curl_off_t cl = -1;
	int ret = -1;

	*retry = false;
	io->pos = 0;
	io->failed = false;
	buf_reset(&io->errbody);
	r->etag[0] = '\0';
	r->status = 0;
	r->length = -1;
	if (r->out)
		buf_reset(r->out);
	if (r->out_fd >= 0 &&
	    (ftruncate(r->out_fd, 0) == -1 || lseek(r->out_fd, 0, SEEK_SET) == -1)) {
		err_set(&io->err, errno, "truncate the file");
		io->failed = true;
		goto out;
	}
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	if (buf_append(&path, "/", 1, why) == -1 ||
	    na_s3_uri_encode(s->bucket, false, &path, why) == -1 ||
	    (r->key && (buf_append(&path, "/", 1, why) == -1 ||
			na_s3_uri_encode(r->key, true, &path, why) == -1)) ||
	    na_s3_query(r->params, r->nparams, &query, why) == -1 ||
	    buf_appendf(&url, why, "%s%s%s%s", s->endpoint, buf_str(&path), query.len ? "?" : "",
			buf_str(&query)) == -1)
		goto out;
	sig.uri = buf_str(&path);
	sig.query = buf_str(&query);
	if (na_s3_sign(&sig, &auth, NULL, NULL, why) == -1)
		goto out;
	/* An empty "Expect:": no 100-continue round trip before a body. */
	if (s3_hdr(&hdrs, &tmp, "Host", s->host) == -1 ||
	    s3_hdr(&hdrs, &tmp, "x-amz-content-sha256", r->sha) == -1 ||
	    s3_hdr(&hdrs, &tmp, "x-amz-date", date) == -1 ||
	    s3_hdr(&hdrs, &tmp, "Authorization", buf_str(&auth)) == -1 ||
	    !(hdrs = curl_slist_append(hdrs, "Expect:"))) {
		err_set(why, ENOMEM, "request headers");
		goto out;
	}
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, buf_str(&url));
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L); /* a key may hold "../" */
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, S3_CONNECT_TIMEOUT_MS);
	/* S3 may take minutes to complete a multipart upload, sending blanks
	 * now and then meanwhile: only silence counts as a stall there. */
	if (r->completion) {
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 4L * s->stall_s);
	} else {
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, S3_LOW_SPEED);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)s->stall_s);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s3_on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, io);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s3_on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, io);
	if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (r->body) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 256L << 10);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->len);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, s3_on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, io);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, s3_on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, io);
		if (strcmp(r->method, "PUT") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	} else if (strcmp(r->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (io->failed)
		goto out;
	if (rc != CURLE_OK) {
		size_t n = strlen(detail);

		while (n && (detail[n - 1] == '\n' || detail[n - 1] == ' '))
			detail[--n] = '\0';
		/* curl's own buffer is the precise part ("Failed to connect to ...
		 * port 9000 after 0 ms: Couldn't connect to server"). */
		if (n && strstr(detail, curl_easy_strerror(rc)))
			err_set(why, 0, "%s", detail);
		else
			err_set(why, 0, "%s%s%s%s", curl_easy_strerror(rc), n ? " (" : "", detail,
				n ? ")" : "");
		if (rc == CURLE_OPERATION_TIMEDOUT)
			why->code = ETIMEDOUT;
		*retry = s3_curl_retryable(rc);
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	r->length = cl;
	ret = 0;
out:
	curl_slist_free_all(hdrs);
	buf_free(&path);
	buf_free(&query);
	buf_free(&url);
	buf_free(&auth);
	buf_free(&tmp);
	return ret;
}

static void s3_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Sends r until it gets a final answer or runs out of attempts.  Returns 0
 * for a 2xx answer; -1 with e saying which request failed and why. */
static int s3_send(struct na_s3 *s, CURL *h, struct s3_req *r, struct err *e)
{
	struct s3_io io = {r, h, 0, BUF_INIT(S3_ERRBODY_MAX), ERR_INIT, false};
	struct err why = ERR_INIT;
	char name[320];
	long delay = s->backoff_ms;
	int i, status = 502;

	snprintf(name, sizeof(name), "%s%s%s%s%s%s", s->bucket, r->key ? "/" : "",
		 r->key ? r->key : "", r->what ? " (" : "", r->what ? r->what : "",
		 r->what ? ")" : "");
	for (i = 1;; i++) {
		uint64_t t0 = util_now_ms();
		bool retry = false;

		r->tries = i;
		r->code[0] = '\0';
		if (s3_attempt(s, h, r, &io, &why, &retry) == 0) {
			bool ok = r->status >= 200 && r->status <= 299;
			const struct buf *body = ok ? r->out : &io.errbody;

			if (ok && r->completion && body && body->len &&
			    s3_xml_find(body->data, body->data + body->len, "Error",
					&(struct s3_span){0})) {
				s3_error_code(body, r->code, sizeof(r->code));
				ok = false;
				retry = true;
			} else if (!ok) {
				s3_error_code(body, r->code, sizeof(r->code));
				retry = r->status >= 500 ? r->status != 501
							 : r->status == 429 || r->status == 408;
			}
			log_debug("s3 request", "{s:s, s:s, s:i, s:i, s:I}", "method", r->method,
				  "object", name, "status", (int)r->status, "attempt", i, "ms",
				  (json_int_t)(util_now_ms() - t0));
			if (ok) {
				buf_free(&io.errbody);
				return 0;
			}
			err_set(&why, 0, "%ld %s", r->status,
				r->code[0]         ? r->code
				: r->status == 404 ? "Not Found"
						   : "(no error code)");
			/* 404 is for a missing object, not a missing bucket or upload */
			status = r->status == 404 && r->key &&
						 (!r->code[0] || strcmp(r->code, "NoSuchKey") == 0)
					 ? 404
					 : 502;
		} else if (io.failed) {
			break; /* our side (the file, a buffer's limit): no retry helps */
		}
		if (!retry || i >= s->attempts)
			break;
		log_warn("s3 request failed, retrying", "{s:s, s:s, s:i, s:s, s:i}", "method",
			 r->method, "object", name, "attempt", i, "error", why.msg, "delay_ms",
			 (int)delay);
		s3_sleep_ms(delay + (long)(util_now_ms() % (uint64_t)(delay / 4 + 1)));
		delay = delay * 2 > S3_BACKOFF_MAX_MS ? S3_BACKOFF_MAX_MS : delay * 2;
	}
	buf_free(&io.errbody);
	if (io.failed) {
		if (e)
			*e = io.err;
		return err_wrap(e, "s3 %s %s", r->method, name);
	}
	if (i > 1)
		err_http(e, status, "s3 %s %s: %s (after %d attempts)", r->method, name, why.msg,
			 i);
	else
		err_http(e, status, "s3 %s %s: %s", r->method, name, why.msg);
	if (e)
		e->code = why.code;
	return -1;
}

/* ---- the operations ---- */

static CURL *s3_handle(struct err *e)
{
	CURL *h;

	pthread_once(&s3_once, s3_global_init);
	if (s3_init_rc != CURLE_OK) {
		err_set(e, 0, "initialise libcurl: %s", curl_easy_strerror(s3_init_rc));
		return NULL;
	}
	h = curl_easy_init();
	if (!h)
		err_set(e, ENOMEM, "curl_easy_init");
	return h;
}

static int s3_key_check(const struct na_s3 *s, const char *op, const char *key, struct err *e)
{
	if (!key || !*key)
		return err_http(e, 400, "s3 %s %s: the key is empty", op, s->bucket);
	if (strlen(key) > S3_KEY_MAX)
		return err_http(e, 400, "s3 %s %s/%.40s...: keys are at most %d bytes", op,
				s->bucket, key, S3_KEY_MAX);
	return 0;
}

int na_s3_put_mem(struct na_s3 *s, const char *key, const void *data, size_t len, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	struct s3_req r;

	if (s3_key_check(s, "PUT", key, e) == -1 || !(h = s3_handle(e)))
		return -1;
	s3_req_init(&r, "PUT", key);
	r.body = true;
	r.mem = data ? data : "";
	r.len = (long long)len;
	if (s3_sha256_hex(r.mem, len, r.sha) == -1)
		return err_set(e, 0, "s3 PUT %s/%s: SHA-256 failed", s->bucket, key);
	return s3_send(s, h, &r, e);
}

/* Appends s to out with the characters XML gives a meaning escaped. */
static int s3_xml_escape(struct buf *out, const char *s, struct err *e)
{
	for (; *s; s++) {
		const char *rep = *s == '&'   ? "&amp;"
				  : *s == '<' ? "&lt;"
				  : *s == '>' ? "&gt;"
					      : NULL;

		if (rep ? buf_appends(out, rep, e) == -1 : buf_append(out, s, 1, e) == -1)
			return -1;
	}
	return 0;
}

static void s3_abort_upload(struct na_s3 *s, CURL *h, const char *key, const char *id)
{
	struct na_s3_param q[] = {{"uploadId", id}};
	struct err e = ERR_INIT;
	struct s3_req r;

	s3_req_init(&r, "DELETE", key);
	r.what = "abort multipart upload";
	r.params = q;
	r.nparams = ARRAY_LEN(q);
	if (s3_send(s, h, &r, &e) == -1)
		log_warn("could not abort a multipart upload; its parts stay until the bucket's "
			 "lifecycle rules remove them",
			 "{s:s, s:s}", "error", e.msg, "upload_id", id);
}

/* True when key exists and holds size bytes. */
static bool s3_has(struct na_s3 *s, CURL *h, const char *key, long long size)
{
	struct s3_req r;

	s3_req_init(&r, "HEAD", key);
	return s3_send(s, h, &r, NULL) == 0 && r.length == size;
}

/* Uploads size bytes of fd as key in parts. */
static int s3_put_parts(struct na_s3 *s, CURL *h, const char *key, int fd, long long size,
			struct err *e)
{
	struct buf answer = BUF_INIT(S3_XML_MAX), done = BUF_INIT(S3_XML_MAX), id = BUF_INIT(4096);
	struct na_s3_param init_q[] = {{"uploads", ""}}, done_q[] = {{"uploadId", NULL}};
	long long part = s->part_size, nparts, i;
	struct s3_span span;
	struct s3_req r;
	char what[64], num[24];
	int ret = -1;

	if ((size + part - 1) / part > NA_S3_PARTS_MAX) {
		part = (size + NA_S3_PARTS_MAX - 1) / NA_S3_PARTS_MAX;
		part = (part + (1LL << 20) - 1) & ~((1LL << 20) - 1);
	}
	nparts = (size + part - 1) / part;

	s3_req_init(&r, "POST", key);
	r.what = "initiate multipart upload";
	r.params = init_q;
	r.nparams = ARRAY_LEN(init_q);
	r.body = true;
	r.mem = "";
	r.out = &answer;
	if (s3_send(s, h, &r, e) == -1)
		goto out;
	if (!answer.len || !s3_xml_find(answer.data, answer.data + answer.len, "UploadId", &span) ||
	    !span.n || s3_xml_text(span, &id, e) == -1) {
		err_http(e, 502,
			 "s3 POST %s/%s (initiate multipart upload): no UploadId in the answer",
			 s->bucket, key);
		goto out;
	}
	if (buf_appends(&done,
			"<CompleteMultipartUpload "
			"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
			e) == -1)
		goto abort;
	for (i = 1; i <= nparts; i++) {
		struct na_s3_param q[] = {{"partNumber", num}, {"uploadId", buf_str(&id)}};

		snprintf(num, sizeof(num), "%lld", i);
		snprintf(what, sizeof(what), "part %lld of %lld", i, nparts);
		s3_req_init(&r, "PUT", key);
		r.what = what;
		r.params = q;
		r.nparams = ARRAY_LEN(q);
		r.body = true;
		r.fd = fd;
		r.off = (i - 1) * part;
		r.len = i < nparts ? part : size - r.off;
		if (digest_sha256_fd(fd, r.off, r.len, r.sha, e) == -1) {
			err_wrap(e, "s3 PUT %s/%s (%s)", s->bucket, key, what);
			goto abort;
		}
		if (s3_send(s, h, &r, e) == -1)
			goto abort;
		if (!r.etag[0]) {
			err_http(e, 502, "s3 PUT %s/%s (%s): no ETag in the answer", s->bucket, key,
				 what);
			goto abort;
		}
		if (buf_appendf(&done, e, "<Part><PartNumber>%lld</PartNumber><ETag>", i) == -1 ||
		    s3_xml_escape(&done, r.etag, e) == -1 ||
		    buf_appends(&done, "</ETag></Part>", e) == -1)
			goto abort;
	}
	if (buf_appends(&done, "</CompleteMultipartUpload>", e) == -1)
		goto abort;
	done_q[0].value = buf_str(&id);
	s3_req_init(&r, "POST", key);
	r.what = "complete multipart upload";
	r.params = done_q;
	r.nparams = ARRAY_LEN(done_q);
	r.body = true;
	r.mem = done.data;
	r.len = (long long)done.len;
	r.out = &answer;
	r.completion = true;
	if (s3_sha256_hex(done.data, done.len, r.sha) == -1) {
		err_set(e, 0, "s3 POST %s/%s: SHA-256 failed", s->bucket, key);
		goto abort;
	}
	if (s3_send(s, h, &r, e) == -1) {
		/* A completion sent again that finds its upload gone: the first
		 * one may have done the work and lost only its answer. */
		if (r.tries < 2 || strcmp(r.code, "NoSuchUpload") != 0 || !s3_has(s, h, key, size))
			goto abort;
		log_info("s3 completion answered NoSuchUpload after a retry; the object is there",
			 "{s:s, s:I}", "key", key, "bytes", (json_int_t)size);
		err_clear(e);
	}
	log_debug("s3 multipart upload done", "{s:s, s:I, s:I}", "key", key, "parts",
		  (json_int_t)nparts, "bytes", (json_int_t)size);
	ret = 0;
	goto out;
abort:
	s3_abort_upload(s, h, key, buf_str(&id));
out:
	buf_free(&answer);
	buf_free(&done);
	buf_free(&id);
	return ret;
}

int na_s3_put_file(struct na_s3 *s, const char *key, const char *path, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	AUTOCLOSE int fd = -1;
	struct stat st;
	struct s3_req r;

	if (s3_key_check(s, "PUT", key, e) == -1)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return err_set(e, errno, "s3 PUT %s/%s: open `%s`", s->bucket, key, path);
	if (fstat(fd, &st) == -1)
		return err_set(e, errno, "s3 PUT %s/%s: stat `%s`", s->bucket, key, path);
	if (!S_ISREG(st.st_mode))
		return err_set(e, EINVAL, "s3 PUT %s/%s: `%s` is not a regular file", s->bucket,
			       key, path);
	if (!(h = s3_handle(e)))
		return -1;
	if (st.st_size > s->part_size)
		return s3_put_parts(s, h, key, fd, (long long)st.st_size, e);
	s3_req_init(&r, "PUT", key);
	r.body = true;
	r.fd = fd;
	r.len = (long long)st.st_size;
	if (digest_sha256_fd(fd, 0, r.len, r.sha, e) == -1)
		return err_wrap(e, "s3 PUT %s/%s: `%s`", s->bucket, key, path);
	return s3_send(s, h, &r, e);
}

int na_s3_get_file(struct na_s3 *s, const char *key, const char *path, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	AUTOCLOSE int fd = -1;
	struct s3_req r;

	if (s3_key_check(s, "GET", key, e) == -1 || !(h = s3_handle(e)))
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		return err_set(e, errno, "s3 GET %s/%s: open `%s`", s->bucket, key, path);
	s3_req_init(&r, "GET", key);
	r.out_fd = fd;
	if (s3_send(s, h, &r, e) == -1)
		return -1;
	if (fsync(fd) == -1)
		return err_set(e, errno, "s3 GET %s/%s: fsync `%s`", s->bucket, key, path);
	if (close(take_fd(&fd)) == -1)
		return err_set(e, errno, "s3 GET %s/%s: close `%s`", s->bucket, key, path);
	return 0;
}

int na_s3_get_mem(struct na_s3 *s, const char *key, struct buf *out, size_t max, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	struct s3_req r;

	if (s3_key_check(s, "GET", key, e) == -1 || !(h = s3_handle(e)))
		return -1;
	buf_reset(out);
	out->max = max;
	s3_req_init(&r, "GET", key);
	r.out = out;
	return s3_send(s, h, &r, e);
}

int na_s3_head(struct na_s3 *s, const char *key, long long *size, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	struct s3_req r;

	if (s3_key_check(s, "HEAD", key, e) == -1 || !(h = s3_handle(e)))
		return -1;
	s3_req_init(&r, "HEAD", key);
	if (s3_send(s, h, &r, e) == -1)
		return -1;
	if (r.length < 0)
		return err_http(e, 502, "s3 HEAD %s/%s: no Content-Length in the answer", s->bucket,
				key);
	if (size)
		*size = r.length;
	return 0;
}

static int s3_delete_h(struct na_s3 *s, CURL *h, const char *key, struct err *e)
{
	struct err mine = ERR_INIT;
	struct s3_req r;

	s3_req_init(&r, "DELETE", key);
	if (s3_send(s, h, &r, &mine) == 0 || mine.http_status == 404)
		return 0;
	if (e)
		*e = mine;
	return -1;
}

int na_s3_delete(struct na_s3 *s, const char *key, struct err *e)
{
	AUTOCURL CURL *h = NULL;

	if (s3_key_check(s, "DELETE", key, e) == -1 || !(h = s3_handle(e)))
		return -1;
	return s3_delete_h(s, h, key, e);
}

static int s3_list_h(struct na_s3 *s, CURL *h, const char *prefix, na_s3_list_fn fn, void *ud,
		     struct err *e)
{
	struct buf page = BUF_INIT(S3_XML_MAX), token = BUF_INIT(8192), prev = BUF_INIT(8192);
	struct err bad;
	char max_keys[16];
	bool truncated;
	int r = -1;

	snprintf(max_keys, sizeof(max_keys), "%d", s->list_page);
	for (;;) {
		struct na_s3_param q[] = {{"list-type", "2"},
					  {"max-keys", max_keys},
					  {"prefix", prefix ? prefix : ""},
					  {"continuation-token", buf_str(&token)}};
		struct s3_req req;

		s3_req_init(&req, "GET", NULL);
		req.what = "list";
		req.params = q;
		req.nparams = token.len ? 4 : 3;
		req.out = &page;
		if (s3_send(s, h, &req, e) == -1)
			break;
		buf_reset(&prev);
		if (buf_append(&prev, token.data ? token.data : "", token.len, e) == -1)
			break;
		bad = (struct err)ERR_INIT;
		r = na_s3_parse_list(page.data, page.len, fn, ud, &truncated, &token, &bad);
		if (r == -1 && bad.msg[0])
			err_http(e, 502, "s3 GET %s (list): %s", s->bucket, bad.msg);
		if (r != 0 || !truncated)
			break;
		r = -1;
		if (!token.len ||
		    (token.len == prev.len && memcmp(token.data, prev.data, token.len) == 0)) {
			err_http(e, 502,
				 "s3 GET %s (list): a truncated page without a new "
				 "continuation token",
				 s->bucket);
			break;
		}
	}
	buf_free(&page);
	buf_free(&token);
	buf_free(&prev);
	return r;
}

int na_s3_list(struct na_s3 *s, const char *prefix, na_s3_list_fn fn, void *ud, struct err *e)
{
	AUTOCURL CURL *h = s3_handle(e);

	if (!h)
		return -1;
	return s3_list_h(s, h, prefix, fn, ud, e);
}

struct s3_rm {
	struct na_s3 *s;
	CURL *h;
	long long n;
	struct err *e;
};

static int s3_rm_one(const char *key, long long size, void *ud)
{
	struct s3_rm *x = ud;

	(void)size;
	if (s3_delete_h(x->s, x->h, key, x->e) == -1)
		return -1;
	x->n++;
	return 0;
}

long long na_s3_delete_prefix(struct na_s3 *s, const char *prefix, struct err *e)
{
	AUTOCURL CURL *h = NULL;
	struct err mine = ERR_INIT;
	struct s3_rm x = {s, NULL, 0, e ? e : &mine};

	if (!prefix || !*prefix)
		return err_http(e, 400,
				"s3 delete %s/*: refusing an empty prefix (the whole bucket)",
				s->bucket);
	if (!(h = s3_handle(e)))
		return -1;
	x.h = h;
	if (s3_list_h(s, h, prefix, s3_rm_one, &x, x.e) != 0)
		return -1;
	return x.n;
}

/* ---- the client ---- */

/* Checks endpoint and fills s->endpoint and s->host. */
static int s3_endpoint(struct na_s3 *s, const char *ep, struct err *e)
{
	const char *auth, *end, *colon, *port = NULL;
	bool tls = strncmp(ep, "https://", 8) == 0;
	size_t n = strlen(ep);
	long pnum = 0;

	if (!tls && strncmp(ep, "http://", 7) != 0)
		return err_set(e, 0, "S3 endpoint `%s`: give http://host[:port] or https://...",
			       ep);
	auth = ep + (tls ? 8 : 7);
	while (n > (size_t)(auth - ep) && ep[n - 1] == '/')
		n--;
	end = ep + n;
	if (end == auth || strcspn(auth, "/?#@ ") < (size_t)(end - auth))
		return err_set(e, 0, "S3 endpoint `%s`: give http(s)://host[:port], without a path",
			       ep);
	colon = *auth == '[' ? memchr(auth, ']', (size_t)(end - auth)) : auth;
	if (!colon)
		return err_set(e, 0, "S3 endpoint `%s`: unterminated [IPv6 address]", ep);
	colon = memchr(colon, ':', (size_t)(end - colon));
	if (colon) {
		char *stop;

		port = colon + 1;
		pnum = strtol(port, &stop, 10);
		if (port == end || stop != end || pnum < 1 || pnum > 65535 || *port < '0' ||
		    *port > '9')
			return err_set(e, 0, "S3 endpoint `%s`: bad port", ep);
	}
	s->endpoint = strndup(ep, n);
	/* curl leaves the scheme's own port out of Host; so must the signature. */
	if (port && pnum == (tls ? 443 : 80))
		s->host = strndup(auth, (size_t)(colon - auth));
	else
		s->host = strndup(auth, (size_t)(end - auth));
	if (!s->endpoint || !s->host)
		return err_set(e, ENOMEM, "S3 endpoint");
	return 0;
}

struct na_s3 *na_s3_new(const struct na_s3_opts *o, struct err *e)
{
	struct na_s3 *s = calloc(1, sizeof(*s));

	if (!s) {
		err_set(e, ENOMEM, "S3 client");
		return NULL;
	}
	if (!o->endpoint || !*o->endpoint || !o->bucket || !*o->bucket || !o->access_key ||
	    !*o->access_key || !o->secret_key || !*o->secret_key) {
		err_set(e, 0, "S3: the endpoint, bucket, access key and secret key are all needed");
		goto fail;
	}
	if (strcspn(o->bucket, "/?#") != strlen(o->bucket)) {
		err_set(e, 0, "S3 bucket `%s`: not a bucket name", o->bucket);
		goto fail;
	}
	if (strlen(o->secret_key) > 250) {
		err_set(e, 0, "S3: the secret key is longer than 250 bytes");
		goto fail;
	}
	if (o->part_size && o->part_size < NA_S3_PART_MIN) {
		err_set(e, 0, "S3 part size %lld: at least %lld bytes (5 MiB)", o->part_size,
			NA_S3_PART_MIN);
		goto fail;
	}
	if (o->attempts < 0 || o->attempts > 100 || o->backoff_ms < 0 || o->backoff_ms > 60000 ||
	    o->stall_s < 0 || o->list_page < 0 || o->list_page > 1000) {
		err_set(e, 0,
			"S3: attempts 1-100, backoff 0-60000 ms, stall >= 0 s, list page "
			"1-1000");
		goto fail;
	}
	if (s3_endpoint(s, o->endpoint, e) == -1)
		goto fail;
	s->bucket = strdup(o->bucket);
	s->region = strdup(o->region && *o->region ? o->region : "us-east-1");
	s->access_key = strdup(o->access_key);
	s->secret_key = strdup(o->secret_key);
	if (!s->bucket || !s->region || !s->access_key || !s->secret_key) {
		err_set(e, ENOMEM, "S3 client");
		goto fail;
	}
	s->attempts = o->attempts ? o->attempts : 5;
	s->backoff_ms = o->backoff_ms ? o->backoff_ms : 200;
	s->stall_s = o->stall_s ? o->stall_s : 30;
	s->list_page = o->list_page ? o->list_page : 1000;
	s->part_size = o->part_size ? o->part_size : NA_S3_PART_DEFAULT;
	return s;
fail:
	na_s3_free(s);
	return NULL;
}

void na_s3_free(struct na_s3 *s)
{
	if (!s)
		return;
	if (s->secret_key)
		OPENSSL_cleanse(s->secret_key, strlen(s->secret_key));
	free(s->endpoint);
	free(s->host);
	free(s->bucket);
	free(s->region);
	free(s->access_key);
	free(s->secret_key);
	free(s);
}
