/* Unit tests for na_s3.
 *
 * The signer against the worked examples of AWS's S3 documentation
 * ("Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk"): the canonical request, the string to sign
 * and the Authorization header of GET Object with a Range, PUT Object of
 * `/test$file.text`, GET Bucket Lifecycle and GET Bucket (List Objects).
 * s3rver accepts any signature, so these are what proves ours.  Then the
 * encoding rules, query sorting and the list parser, and the client itself
 * against a scripted server in a thread of the test: what goes on the wire
 * is what was signed (path, query, Host, the body's real SHA-256), which
 * answers are retried, how failures read, multipart uploads and their
 * abort, list pages, a server that never answers, several threads at once. */
#include "node-agent/na_s3.h"
#include "tests/unit/node/suites.h"

#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define DOC_DATE "20130524T000000Z"
#define DOC_KEY "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DOC_HOST "examplebucket.s3.amazonaws.com"
#define DOC_SCOPE "AWS4-HMAC-SHA256 Credential=" DOC_KEY "/20130524/us-east-1/s3/aws4_request,"

static void sha256_hex(const void *p, size_t n, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	ck_assert(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL));
	util_hex(md, len, hex);
}

/* ---- the documentation's examples ---- */

struct doc_case {
	const char *name;
	const char *method;
	const char *path; /* before encoding */
	struct na_s3_param params[2];
	size_t nparams;
	const char *payload;            /* hashed by the test */
	const char *payload_hash;       /* as published */
	struct na_s3_header headers[6]; /* given unsorted, in mixed case */
	size_t nheaders;
	const char *canonical;
	const char *to_sign;
	const char *authorization;
};

static const struct doc_case doc_cases[] = {
	{"GET Object",
	 "GET",
	 "/test.txt",
	 {{NULL, NULL}},
	 0,
	 "",
	 EMPTY_SHA,
	 {{"X-Amz-Date", DOC_DATE},
	  {"Range", "bytes=0-9"},
	  {"x-amz-content-sha256", EMPTY_SHA},
	  {"Host", DOC_HOST}},
	 4,
	 "GET\n/test.txt\n\nhost:" DOC_HOST "\nrange:bytes=0-9\nx-amz-content-sha256:" EMPTY_SHA
	 "\nx-amz-date:" DOC_DATE "\n\nhost;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
	 "AWS4-HMAC-SHA256\n" DOC_DATE "\n20130524/us-east-1/s3/aws4_request\n"
	 "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
	 DOC_SCOPE "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature="
		   "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
	{"PUT Object",
	 "PUT",
	 "/test$file.text",
	 {{NULL, NULL}},
	 0,
	 "Welcome to Amazon S3.",
	 "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
	 {{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
	  {"Host", DOC_HOST},
	  {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
	  {"x-amz-date", DOC_DATE},
	  {"X-Amz-Content-Sha256",
	   "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"}},
	 5,
	 "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:" DOC_HOST
	 "\nx-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
	 "\nx-amz-date:" DOC_DATE "\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
	 "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
	 "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
	 "AWS4-HMAC-SHA256\n" DOC_DATE "\n20130524/us-east-1/s3/aws4_request\n"
	 "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
	 DOC_SCOPE "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
		   "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
	{"GET Bucket Lifecycle",
	 "GET",
	 "/",
	 {{"lifecycle", ""}},
	 1,
	 "",
	 EMPTY_SHA,
	 {{"x-amz-date", DOC_DATE}, {"x-amz-content-sha256", EMPTY_SHA}, {"host", DOC_HOST}},
	 3,
	 "GET\n/\nlifecycle=\nhost:" DOC_HOST "\nx-amz-content-sha256:" EMPTY_SHA
	 "\nx-amz-date:" DOC_DATE "\n\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
	 "AWS4-HMAC-SHA256\n" DOC_DATE "\n20130524/us-east-1/s3/aws4_request\n"
	 "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
	 DOC_SCOPE "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature="
		   "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
	{"GET Bucket (List Objects)",
	 "GET",
	 "/",
	 {{"prefix", "J"}, {"max-keys", "2"}},
	 2,
	 "",
	 EMPTY_SHA,
	 {{"x-amz-content-sha256", EMPTY_SHA}, {"Host", DOC_HOST}, {"X-AMZ-DATE", DOC_DATE}},
	 3,
	 "GET\n/\nmax-keys=2&prefix=J\nhost:" DOC_HOST "\nx-amz-content-sha256:" EMPTY_SHA
	 "\nx-amz-date:" DOC_DATE "\n\nhost;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
	 "AWS4-HMAC-SHA256\n" DOC_DATE "\n20130524/us-east-1/s3/aws4_request\n"
	 "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
	 DOC_SCOPE "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature="
		   "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

START_TEST(aws_documentation_examples)
{
	const struct doc_case *c = &doc_cases[_i];
	struct buf uri = BUF_INIT(4096), query = BUF_INIT(4096), auth = BUF_INIT(4096);
	struct buf canonical = BUF_INIT(8192), to_sign = BUF_INIT(4096);
	struct err e = ERR_INIT;
	char hash[65];

	sha256_hex(c->payload, strlen(c->payload), hash);
	ck_assert_str_eq(hash, c->payload_hash);
	ck_assert_int_eq(na_s3_uri_encode(c->path, true, &uri, &e), 0);
	ck_assert_int_eq(na_s3_query(c->params, c->nparams, &query, &e), 0);

	struct na_s3_sig sig = {c->method,   buf_str(&uri), buf_str(&query), c->headers,
				c->nheaders, hash,          DOC_DATE,        "us-east-1",
				"s3",        DOC_KEY,       DOC_SECRET};

	ck_assert_msg(na_s3_sign(&sig, &auth, &canonical, &to_sign, &e) == 0, "%s: %s", c->name,
		      e.msg);
	ck_assert_str_eq(buf_str(&canonical), c->canonical);
	ck_assert_str_eq(buf_str(&to_sign), c->to_sign);
	ck_assert_str_eq(buf_str(&auth), c->authorization);
	buf_free(&uri);
	buf_free(&query);
	buf_free(&auth);
	buf_free(&canonical);
	buf_free(&to_sign);
}
END_TEST

/* Values are trimmed, inner runs of blanks folded, and headers of one name
 * joined with ',' in the order given. */
START_TEST(header_values_are_canonical)
{
	const struct na_s3_header h[] = {{"X-Amz-Meta-Note", "  two   words\there  "},
					 {"host", "h:9000"},
					 {"x-amz-meta-note", "b"}};
	struct na_s3_sig sig = {"GET",    "/b/k",      "",   h,    3,   EMPTY_SHA,
				DOC_DATE, "eu-west-3", "s3", "AK", "SK"};
	struct buf auth = BUF_INIT(4096), canonical = BUF_INIT(4096);
	struct err e = ERR_INIT;

	ck_assert_int_eq(na_s3_sign(&sig, &auth, &canonical, NULL, &e), 0);
	ck_assert_str_eq(buf_str(&canonical), "GET\n/b/k\n\nhost:h:9000\nx-amz-meta-note:two words "
					      "here,b\n\nhost;x-amz-meta-note\n" EMPTY_SHA);
	ck_assert_ptr_nonnull(strstr(buf_str(&auth),
				     "Credential=AK/20130524/eu-west-3/s3/aws4_"
				     "request,SignedHeaders=host;x-amz-meta-note,"));
	ck_assert_ptr_null(strstr(buf_str(&auth), "SK"));
	buf_free(&auth);
	buf_free(&canonical);
}
END_TEST

static const struct {
	const char *in;
	bool keep_slash;
	const char *out;
} encodings[] = {
	{"test$file.text", true, "test%24file.text"},
	{"a b", true, "a%20b"},
	{"unreserved-._~AZaz09", false, "unreserved-._~AZaz09"},
	{"ckpt/sb-1/state.img", true, "ckpt/sb-1/state.img"},
	{"ckpt/sb-1/state.img", false, "ckpt%2Fsb-1%2Fstate.img"},
	{"caf\xc3\xa9/\xe6\x97\xa5", true, "caf%C3%A9/%E6%97%A5"},
	{"a+b=c&d?e#f%g*h:i@j,k;l", true, "a%2Bb%3Dc%26d%3Fe%23f%25g%2Ah%3Ai%40j%2Ck%3Bl"},
	{"\x01\x7f\xff", false, "%01%7F%FF"},
	{"", true, ""},
};

START_TEST(uri_encoding)
{
	struct buf out = BUF_INIT(4096);
	struct err e = ERR_INIT;

	ck_assert_int_eq(na_s3_uri_encode(encodings[_i].in, encodings[_i].keep_slash, &out, &e), 0);
	ck_assert_str_eq(buf_str(&out), encodings[_i].out);
	buf_free(&out);
}
END_TEST

static const struct {
	struct na_s3_param p[4];
	size_t n;
	const char *out;
} queries[] = {
	{{{"prefix", "J"}, {"max-keys", "2"}}, 2, "max-keys=2&prefix=J"},
	{{{"uploads", ""}}, 1, "uploads="},
	{{{"uploadId", "a/b+c"}, {"partNumber", "10"}}, 2, "partNumber=10&uploadId=a%2Fb%2Bc"},
	/* sorted by encoded name, byte by byte: upper case first */
	{{{"b", "1"}, {"B", "2"}, {"a", "3"}, {"a-", "4"}}, 4, "B=2&a=3&a-=4&b=1"},
	{{{"x", "2"}, {"x", "1"}}, 2, "x=1&x=2"},
	{{{"prefix", "sb 1/"},
	  {"continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="},
	  {"list-type", "2"}},
	 3,
	 "continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&list-type=2&"
	 "prefix=sb%201%2F"},
	{{{NULL, NULL}}, 0, ""},
};

START_TEST(query_is_sorted_and_encoded)
{
	struct buf out = BUF_INIT(4096);
	struct err e = ERR_INIT;

	ck_assert_int_eq(na_s3_query(queries[_i].p, queries[_i].n, &out, &e), 0);
	ck_assert_str_eq(buf_str(&out), queries[_i].out);
	buf_free(&out);
}
END_TEST

/* ---- the list parser ---- */

struct seen {
	char keys[8][64];
	long long sizes[8];
	int n, stop_at;
};

static int collect(const char *key, long long size, void *ud)
{
	struct seen *s = ud;

	ck_assert_int_lt(s->n, 8);
	snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
	s->sizes[s->n++] = size;
	return s->n == s->stop_at ? 7 : 0;
}

#define LIST_HEAD                                                                                  \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "                           \
	"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>ckpt</Name><Prefix/>"

START_TEST(list_page_is_decoded)
{
	static const char xml[] = LIST_HEAD
		"<KeyCount>4</KeyCount><MaxKeys>4</MaxKeys><IsTruncated>true</IsTruncated>"
		"<Contents><Key>a&amp;b</Key><LastModified>2026-01-01T00:00:00.000Z"
		"</LastModified><ETag>&quot;x&quot;</ETag><Size>0</Size></Contents>"
		"<Contents>\n  <Key>sb 1/$state.img</Key>\n  <Size>41943040</Size>\n"
		"</Contents><Contents><Key>&lt;x&gt;&quot;&apos;</Key><Size>3</Size>"
		"</Contents><Contents><Key>caf&#233;/&#x1F600;</Key><Size>12</Size>"
		"</Contents><NextContinuationToken>t/1&amp;=</NextContinuationToken>"
		"</ListBucketResult>";
	struct seen s = {.stop_at = -1};
	struct buf token = BUF_INIT(1024);
	struct err e = ERR_INIT;
	bool truncated = false;

	ck_assert_msg(na_s3_parse_list(xml, strlen(xml), collect, &s, &truncated, &token, &e) == 0,
		      "%s", e.msg);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(s.keys[0], "a&b");
	ck_assert_int_eq(s.sizes[0], 0);
	ck_assert_str_eq(s.keys[1], "sb 1/$state.img");
	ck_assert_int_eq(s.sizes[1], 41943040);
	ck_assert_str_eq(s.keys[2], "<x>\"'");
	ck_assert_str_eq(s.keys[3], "caf\xc3\xa9/\xf0\x9f\x98\x80");
	ck_assert(truncated);
	ck_assert_str_eq(buf_str(&token), "t/1&=");
	buf_free(&token);
}
END_TEST

START_TEST(list_page_last_and_stopped)
{
	static const char last[] = LIST_HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>";
	static const char two[] = LIST_HEAD "<Contents><Key>a</Key><Size>1</Size></Contents>"
					    "<Contents><Key>b</Key><Size>2</Size></Contents>"
					    "<IsTruncated>false</IsTruncated></ListBucketResult>";
	struct seen s = {.stop_at = -1};
	struct buf token = BUF_INIT(1024);
	struct err e = ERR_INIT;
	bool truncated = true;

	ck_assert_int_eq(na_s3_parse_list(last, strlen(last), collect, &s, &truncated, &token, &e),
			 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert(!truncated);
	ck_assert_str_eq(buf_str(&token), "");
	s.stop_at = 1;
	ck_assert_int_eq(na_s3_parse_list(two, strlen(two), collect, &s, &truncated, &token, &e),
			 7);
	ck_assert_int_eq(s.n, 1);
	buf_free(&token);
}
END_TEST

static const char *const bad_pages[] = {
	"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>",
	LIST_HEAD "<Contents><Size>1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a</Key></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a</Key><Size>1x</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a&#xD800;</Key><Size>1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a&amp</Key><Size>1</Size></Contents></ListBucketResult>",
	LIST_HEAD "<Contents><Key>a</Key><Size>1</Size></Contents>",
	"",
};

START_TEST(list_page_malformed)
{
	struct seen s = {.stop_at = -1};
	struct buf token = BUF_INIT(1024);
	struct err e = ERR_INIT;
	bool truncated;

	ck_assert_int_eq(na_s3_parse_list(bad_pages[_i], strlen(bad_pages[_i]), collect, &s,
					  &truncated, &token, &e),
			 -1);
	ck_assert_int_eq(s.n, 0);
	ck_assert(e.msg[0]);
	buf_free(&token);
}
END_TEST

/* ---- the client against a scripted server ---- */

#define FAKE_MAX 24

struct fake_reply {
	int status;
	const char *headers; /* extra header lines, each ending in \r\n */
	const char *body;
	long long head_len; /* Content-Length answered to HEAD */
	bool silent;        /* accept, read, never answer */
};

struct fake_req {
	char method[8];
	char target[600];
	char head[4096];
	char sha[65]; /* of the body as received */
	long long body_len;
	char body[4096]; /* its start */
};

static struct {
	int fd, stop[2], port;
	pthread_t thread;
	pthread_mutex_t mu;
	struct fake_reply replies[FAKE_MAX];
	int nreplies;
	struct fake_req reqs[FAKE_MAX];
	int nreqs;
} fk;

/* Copies the value of request header name (without blanks around) into out. */
static void fake_header(const char *head, const char *name, char *out, size_t len)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\n%s:", name);
	out[0] = '\0';
	if (!(p = strcasestr(head, pat)))
		return;
	for (p += strlen(pat); *p == ' '; p++)
		;
	end = strchr(p, '\r');
	snprintf(out, len, "%.*s", (int)(end ? end - p : (long)strlen(p)), p);
}

static void fake_send(int c, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(c, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* One connection: one request (every answer says Connection: close). */
static void fake_serve(int c)
{
	struct fake_req q;
	struct fake_reply rep;
	char buf[65536], cl[32], out[1024];
	size_t got = 0, head_len;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *end = NULL;
	int i, n;

	memset(&q, 0, sizeof(q));
	while (!end && got < sizeof(q.head) - 1) {
		ssize_t r = recv(c, q.head + got, sizeof(q.head) - 1 - got, 0);

		if (r <= 0)
			goto out;
		got += (size_t)r;
		q.head[got] = '\0';
		end = strstr(q.head, "\r\n\r\n");
	}
	if (!end)
		goto out;
	head_len = (size_t)(end - q.head) + 4;
	sscanf(q.head, "%7s %599s", q.method, q.target);
	fake_header(q.head, "Content-Length", cl, sizeof(cl));
	q.body_len = strtoll(cl, NULL, 10);
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	/* What came with the head belongs to the body. */
	got -= head_len;
	memcpy(q.body, q.head + head_len, got < sizeof(q.body) ? got : sizeof(q.body) - 1);
	EVP_DigestUpdate(ctx, q.head + head_len, got);
	q.head[head_len] = '\0';
	while ((long long)got < q.body_len) {
		ssize_t r = recv(c, buf, sizeof(buf), 0);

		if (r <= 0)
			goto out;
		if (got < sizeof(q.body) - 1)
			memcpy(q.body + got, buf,
			       (size_t)r < sizeof(q.body) - 1 - got ? (size_t)r
								    : sizeof(q.body) - 1 - got);
		EVP_DigestUpdate(ctx, buf, (size_t)r);
		got += (size_t)r;
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	util_hex(md, mdlen, q.sha);

	pthread_mutex_lock(&fk.mu);
	i = fk.nreqs < FAKE_MAX ? fk.nreqs++ : FAKE_MAX - 1;
	fk.reqs[i] = q;
	rep = fk.replies[i < fk.nreplies ? i : fk.nreplies - 1];
	pthread_mutex_unlock(&fk.mu);
	if (rep.silent) {
		struct pollfd p = {c, POLLIN, 0};

		poll(&p, 1, 10000); /* until the client gives up */
		goto out;
	}
	n = snprintf(out, sizeof(out),
		     "HTTP/1.1 %d Scripted\r\nContent-Length: %lld\r\nConnection: close\r\n%s\r\n",
		     rep.status,
		     strcmp(q.method, "HEAD") == 0 ? rep.head_len : (long long)strlen(rep.body),
		     rep.headers ? rep.headers : "");
	fake_send(c, out, (size_t)n);
	if (strcmp(q.method, "HEAD") != 0)
		fake_send(c, rep.body, strlen(rep.body));
out:
	EVP_MD_CTX_free(ctx);
}

static void *fake_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = {{fk.fd, POLLIN, 0}, {fk.stop[0], POLLIN, 0}};
		int c;

		if (poll(p, 2, -1) == -1 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN) ||
		    (c = accept4(fk.fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		fake_serve(c);
		close(c);
	}
	return NULL;
}

static void fake_setup(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	memset(&fk, 0, sizeof(fk));
	pthread_mutex_init(&fk.mu, NULL);
	fk.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(fk.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fk.fd, (struct sockaddr *)&a, &len), 0);
	ck_assert_int_eq(listen(fk.fd, 64), 0);
	fk.port = ntohs(a.sin_port);
	ck_assert_int_eq(pipe2(fk.stop, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&fk.thread, NULL, fake_main, NULL), 0);
}

static void fake_teardown(void)
{
	ck_assert_int_eq(util_write_all(fk.stop[1], "x", 1), 0);
	pthread_join(fk.thread, NULL);
	close(fk.fd);
	close(fk.stop[0]);
	close(fk.stop[1]);
	pthread_mutex_destroy(&fk.mu);
}

static void fake_script(const struct fake_reply *r, int n)
{
	ck_assert_int_le(n, FAKE_MAX);
	memcpy(fk.replies, r, (size_t)n * sizeof(*r));
	fk.nreplies = n;
}

static int fake_count(void)
{
	int n;

	pthread_mutex_lock(&fk.mu);
	n = fk.nreqs;
	pthread_mutex_unlock(&fk.mu);
	return n;
}

#define SECRET "not/a+real=SECRET-key-0123456789"

static struct na_s3 *client(int attempts, long long part_size, int list_page)
{
	char ep[64];
	struct na_s3_opts o = {ep,       "ckpt", NULL,      "AKID", SECRET,
			       attempts, 1,      part_size, 0,      list_page};
	struct err e = ERR_INIT;
	struct na_s3 *s;

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/", fk.port);
	s = na_s3_new(&o, &e);
	ck_assert_msg(s != NULL, "%s", e.msg);
	return s;
}

/* Request i was sent as signed: its path and query, Host and x-amz-date
 * give back its Authorization, and x-amz-content-sha256 is the body's. */
static const struct fake_req *signed_as_sent(int i, const char *method, const char *target)
{
	const struct fake_req *q = &fk.reqs[i];
	char host[128], date[32], sha[80], auth[512], want_host[64], path[600];
	const char *qm = strchr(q->target, '?');
	struct buf want = BUF_INIT(4096);
	struct err e = ERR_INIT;

	ck_assert_int_lt(i, fake_count());
	ck_assert_str_eq(q->method, method);
	ck_assert_str_eq(q->target, target);
	fake_header(q->head, "Host", host, sizeof(host));
	fake_header(q->head, "x-amz-date", date, sizeof(date));
	fake_header(q->head, "x-amz-content-sha256", sha, sizeof(sha));
	fake_header(q->head, "Authorization", auth, sizeof(auth));
	snprintf(want_host, sizeof(want_host), "127.0.0.1:%d", fk.port);
	ck_assert_str_eq(host, want_host);
	ck_assert_str_eq(sha, q->sha);
	snprintf(path, sizeof(path), "%.*s", (int)(qm ? qm - q->target : (long)strlen(q->target)),
		 q->target);

	const struct na_s3_header h[] = {
		{"host", host}, {"x-amz-content-sha256", sha}, {"x-amz-date", date}};
	struct na_s3_sig sig = {q->method,   path, qm ? qm + 1 : "", h,     3, sha, date,
				"us-east-1", "s3", "AKID",           SECRET};

	ck_assert_int_eq(na_s3_sign(&sig, &want, NULL, NULL, &e), 0);
	ck_assert_str_eq(auth, buf_str(&want));
	ck_assert_ptr_null(strstr(q->head, SECRET));
	buf_free(&want);
	return q;
}

START_TEST(put_is_signed_as_sent)
{
	static const struct fake_reply r[] = {{200, "ETag: \"e\"\r\n", "", 0, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;
	const struct fake_req *q;

	fake_script(r, 1);
	s = client(3, 0, 0);
	ck_assert_msg(na_s3_put_mem(s, "sb-1/a b$c~d", "hello", 5, &e) == 0, "%s", e.msg);
	q = signed_as_sent(0, "PUT", "/ckpt/sb-1/a%20b%24c~d");
	ck_assert_int_eq(q->body_len, 5);
	ck_assert_str_eq(q->body, "hello");
	ck_assert_int_eq(fake_count(), 1);
	na_s3_free(s);
}
END_TEST

START_TEST(server_errors_are_retried)
{
	static const struct fake_reply r[] = {
		{503, NULL, "<Error><Code>SlowDown</Code></Error>", 0, false},
		{500, NULL, "<Error><Code>InternalError</Code></Error>", 0, false},
		{429, NULL, "", 0, false},
		{200, NULL, "", 0, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 4);
	s = client(4, 0, 0);
	ck_assert_msg(na_s3_put_mem(s, "k", "x", 1, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(fake_count(), 4);
	for (int i = 0; i < 4; i++)
		signed_as_sent(i, "PUT", "/ckpt/k");
	na_s3_free(s);
}
END_TEST

START_TEST(attempts_run_out)
{
	static const struct fake_reply r[] = {
		{503, NULL, "<Error><Code>SlowDown</Code><Message>m</Message></Error>", 0, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 1);
	s = client(3, 0, 0);
	ck_assert_int_eq(na_s3_put_mem(s, "k", "x", 1, &e), -1);
	ck_assert_int_eq(fake_count(), 3);
	ck_assert_str_eq(e.msg, "s3 PUT ckpt/k: 503 SlowDown (after 3 attempts)");
	ck_assert_int_eq(e.http_status, 502);
	na_s3_free(s);
}
END_TEST

START_TEST(client_errors_are_final)
{
	static const struct fake_reply r[] = {
		{403, NULL,
		 "<?xml version=\"1.0\" "
		 "encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>"
		 "<Message>The request signature we calculated does not match</Message></Error>",
		 0, false},
		{404, NULL, "<Error><Code>NoSuchKey</Code></Error>", 0, false},
		{404, NULL, "", 0, false},
		{404, NULL, "<Error><Code>NoSuchKey</Code></Error>", 0, false},
		{404, NULL, "<Error><Code>NoSuchBucket</Code></Error>", 0, false}};
	struct buf out = BUF_INIT(0);
	struct na_s3 *s;
	struct err e = ERR_INIT;
	long long size = 5;

	fake_script(r, 5);
	s = client(5, 0, 0);
	ck_assert_int_eq(na_s3_put_mem(s, "ckpt/x", "x", 1, &e), -1);
	ck_assert_str_eq(e.msg, "s3 PUT ckpt/ckpt/x: 403 SignatureDoesNotMatch");
	ck_assert_int_eq(e.http_status, 502);
	ck_assert_int_eq(fake_count(), 1);
	ck_assert_int_eq(na_s3_get_mem(s, "gone", &out, 100, &e), -1);
	ck_assert_str_eq(e.msg, "s3 GET ckpt/gone: 404 NoSuchKey");
	ck_assert_int_eq(e.http_status, 404);
	ck_assert_int_eq(na_s3_head(s, "gone", &size, &e), -1);
	ck_assert_str_eq(e.msg, "s3 HEAD ckpt/gone: 404 Not Found");
	ck_assert_int_eq(e.http_status, 404);
	ck_assert_int_eq(size, 5);
	ck_assert_int_eq(na_s3_delete(s, "gone", &e), 0);
	ck_assert_int_eq(fake_count(), 4);
	signed_as_sent(3, "DELETE", "/ckpt/gone");
	/* a missing bucket is not a missing object: a failure even for delete */
	ck_assert_int_eq(na_s3_delete(s, "gone", &e), -1);
	ck_assert_str_eq(e.msg, "s3 DELETE ckpt/gone: 404 NoSuchBucket");
	ck_assert_int_eq(e.http_status, 502);
	buf_free(&out);
	na_s3_free(s);
}
END_TEST

START_TEST(get_head_and_limits)
{
	static const struct fake_reply r[] = {{200, NULL, "manifest", 0, false},
					      {200, NULL, "", 123456789012LL, false},
					      {200, NULL, "0123456789abcdef", 0, false}};
	struct buf out = BUF_INIT(0);
	struct na_s3 *s;
	struct err e = ERR_INIT;
	long long size = 0;

	fake_script(r, 3);
	s = client(3, 0, 0);
	ck_assert_msg(na_s3_get_mem(s, "m.json", &out, 100, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(buf_str(&out), "manifest");
	signed_as_sent(0, "GET", "/ckpt/m.json");
	ck_assert_int_eq(na_s3_head(s, "big", &size, &e), 0);
	ck_assert_int_eq(size, 123456789012LL);
	signed_as_sent(1, "HEAD", "/ckpt/big");
	/* Too large for the caller's limit: an error of ours, not retried. */
	ck_assert_int_eq(na_s3_get_mem(s, "m.json", &out, 10, &e), -1);
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_int_eq(fake_count(), 3);
	buf_free(&out);
	na_s3_free(s);
}
END_TEST

static char tmp_path[64];

static void make_file(long long size)
{
	int fd;
	char chunk[4096];

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/na-s3-XXXXXX");
	fd = mkstemp(tmp_path);
	ck_assert_int_ge(fd, 0);
	for (long long off = 0; off < size; off += (long long)sizeof(chunk)) {
		size_t n = size - off < (long long)sizeof(chunk) ? (size_t)(size - off)
								 : sizeof(chunk);

		memset(chunk, 'a' + (int)(off / NA_S3_PART_MIN), sizeof(chunk));
		ck_assert_int_eq(util_write_all(fd, chunk, n), 0);
	}
	close(fd);
}

#define INIT_ANSWER                                                                                \
	"<InitiateMultipartUploadResult><Bucket>ckpt</Bucket><Key>big</Key>"                       \
	"<UploadId>up/1&amp;2</UploadId></InitiateMultipartUploadResult>"

START_TEST(multipart_upload)
{
	static const struct fake_reply r[] = {
		{200, NULL, INIT_ANSWER, 0, false},
		{200, "ETag: \"p1\"\r\n", "", 0, false},
		{500, NULL, "<Error><Code>InternalError</Code></Error>", 0, false},
		{200, "ETag: \"p2\"\r\n", "", 0, false},
		{200, NULL, "<Error><Code>InternalError</Code></Error>", 0, false},
		{200, NULL,
		 "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag>"
		 "</CompleteMultipartUploadResult>",
		 0, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;
	const struct fake_req *q;
	char sha[65];

	fake_script(r, 6);
	make_file(NA_S3_PART_MIN + 1000);
	s = client(3, NA_S3_PART_MIN, 0);
	ck_assert_msg(na_s3_put_file(s, "big", tmp_path, &e) == 0, "%s", e.msg);
	unlink(tmp_path);
	ck_assert_int_eq(fake_count(), 6);
	signed_as_sent(0, "POST", "/ckpt/big?uploads=");
	q = signed_as_sent(1, "PUT", "/ckpt/big?partNumber=1&uploadId=up%2F1%262");
	ck_assert_int_eq(q->body_len, NA_S3_PART_MIN);
	q = signed_as_sent(3, "PUT", "/ckpt/big?partNumber=2&uploadId=up%2F1%262");
	ck_assert_int_eq(q->body_len, 1000);
	ck_assert_int_eq(q->body[0], 'b');
	/* The completion answered 200 with an <Error> is sent again. */
	signed_as_sent(4, "POST", "/ckpt/big?uploadId=up%2F1%262");
	q = signed_as_sent(5, "POST", "/ckpt/big?uploadId=up%2F1%262");
	ck_assert_str_eq(q->body,
			 "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/"
			 "2006-03-01/\"><Part><PartNumber>1</PartNumber><ETag>\"p1\"</ETag>"
			 "</Part><Part><PartNumber>2</PartNumber><ETag>\"p2\"</ETag></Part>"
			 "</CompleteMultipartUpload>");
	sha256_hex(q->body, strlen(q->body), sha);
	ck_assert_str_eq(sha, q->sha);
	na_s3_free(s);
}
END_TEST

/* The first completion did the work but its answer was lost (a 500 here):
 * the one sent again finds no upload, and a HEAD shows the object whole. */
START_TEST(multipart_completion_answer_lost)
{
	static const struct fake_reply r[] = {
		{200, NULL, INIT_ANSWER, 0, false},
		{200, "ETag: \"p1\"\r\n", "", 0, false},
		{200, "ETag: \"p2\"\r\n", "", 0, false},
		{500, NULL, "<Error><Code>InternalError</Code></Error>", 0, false},
		{404, NULL, "<Error><Code>NoSuchUpload</Code></Error>", 0, false},
		{200, NULL, "", NA_S3_PART_MIN + 7, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 6);
	make_file(NA_S3_PART_MIN + 7);
	s = client(3, NA_S3_PART_MIN, 0);
	ck_assert_msg(na_s3_put_file(s, "big", tmp_path, &e) == 0, "%s", e.msg);
	unlink(tmp_path);
	ck_assert_int_eq(fake_count(), 6);
	signed_as_sent(5, "HEAD", "/ckpt/big");
	na_s3_free(s);
}
END_TEST

START_TEST(multipart_failure_aborts)
{
	static const struct fake_reply r[] = {
		{200, NULL, INIT_ANSWER, 0, false},
		{200, "ETag: \"p1\"\r\n", "", 0, false},
		{403, NULL, "<Error><Code>AccessDenied</Code></Error>", 0, false},
		{204, NULL, "", 0, false}};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 4);
	make_file(2 * NA_S3_PART_MIN + 1);
	s = client(3, NA_S3_PART_MIN, 0);
	ck_assert_int_eq(na_s3_put_file(s, "big", tmp_path, &e), -1);
	unlink(tmp_path);
	ck_assert_str_eq(e.msg, "s3 PUT ckpt/big (part 2 of 3): 403 AccessDenied");
	ck_assert_int_eq(fake_count(), 4);
	signed_as_sent(3, "DELETE", "/ckpt/big?uploadId=up%2F1%262");
	na_s3_free(s);
}
END_TEST

START_TEST(list_follows_tokens)
{
	static const struct fake_reply r[] = {
		{200, NULL,
		 LIST_HEAD
		 "<Contents><Key>p/1</Key><Size>1</Size></Contents><Contents><Key>p/2</Key>"
		 "<Size>2</Size></Contents><IsTruncated>true</IsTruncated>"
		 "<NextContinuationToken>t/1=</NextContinuationToken></ListBucketResult>",
		 0, false},
		{200, NULL,
		 LIST_HEAD "<Contents><Key>p/3</Key><Size>3</Size></Contents><IsTruncated>false"
			   "</IsTruncated></ListBucketResult>",
		 0, false}};
	struct seen seen = {.stop_at = -1};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 2);
	s = client(3, 0, 2);
	ck_assert_msg(na_s3_list(s, "p/", collect, &seen, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(seen.n, 3);
	ck_assert_str_eq(seen.keys[2], "p/3");
	ck_assert_int_eq(seen.sizes[2], 3);
	signed_as_sent(0, "GET", "/ckpt?list-type=2&max-keys=2&prefix=p%2F");
	signed_as_sent(1, "GET",
		       "/ckpt?continuation-token=t%2F1%3D&list-type=2&max-keys=2&prefix=p%2F");
	na_s3_free(s);
}
END_TEST

START_TEST(list_same_token_twice_fails)
{
	static const struct fake_reply r[] = {
		{200, NULL,
		 LIST_HEAD
		 "<IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuation"
		 "Token></ListBucketResult>",
		 0, false}};
	struct seen seen = {.stop_at = -1};
	struct na_s3 *s;
	struct err e = ERR_INIT;

	fake_script(r, 1);
	s = client(3, 0, 0);
	ck_assert_int_eq(na_s3_list(s, NULL, collect, &seen, &e), -1);
	ck_assert_int_eq(fake_count(), 2);
	ck_assert_int_eq(e.http_status, 502);
	ck_assert_int_eq(na_s3_delete_prefix(s, "", &e), -1);
	ck_assert_int_eq(fake_count(), 2);
	na_s3_free(s);
}
END_TEST

START_TEST(silent_server_is_abandoned)
{
	static const struct fake_reply r[] = {{0, NULL, "", 0, true}};
	char ep[64];
	struct na_s3_opts o = {ep, "ckpt", NULL, "AKID", SECRET, 2, 1, 0, 1, 0};
	struct err e = ERR_INIT;
	struct na_s3 *s;
	uint64_t t0;

	fake_script(r, 1);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", fk.port);
	s = na_s3_new(&o, &e);
	ck_assert_ptr_nonnull(s);
	t0 = util_now_ms();
	ck_assert_int_eq(na_s3_delete(s, "k", &e), -1);
	ck_assert_uint_lt(util_now_ms() - t0, 8000);
	ck_assert_int_eq(fake_count(), 2);
	ck_assert_msg(strstr(e.msg, "s3 DELETE ckpt/k: Timeout was reached") == e.msg, "%s", e.msg);
	ck_assert_int_eq(e.code, ETIMEDOUT);
	na_s3_free(s);
}
END_TEST

START_TEST(refused_connection)
{
	char ep[64];
	struct na_s3_opts o = {ep, "ckpt", NULL, "AKID", SECRET, 2, 1, 0, 0, 0};
	struct err e = ERR_INIT;
	struct na_s3 *s;

	/* the scripted server's port, once it is closed */
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", fk.port);
	fake_teardown();
	s = na_s3_new(&o, &e);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(na_s3_head(s, "k", NULL, &e), -1);
	ck_assert_msg(strstr(e.msg, "s3 HEAD ckpt/k: ") == e.msg, "%s", e.msg);
	ck_assert_msg(strstr(e.msg, "Couldn't connect to server"), "%s", e.msg);
	ck_assert_ptr_nonnull(strstr(e.msg, "(after 2 attempts)"));
	ck_assert_int_eq(e.http_status, 502);
	ck_assert_ptr_null(strstr(e.msg, SECRET));
	na_s3_free(s);
	fake_setup(); /* for the fixture's teardown */
}
END_TEST

static void *put_many(void *arg)
{
	struct na_s3 *s = arg;
	struct err e = ERR_INIT;
	char key[32];

	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "t/%lx/%d", (unsigned long)pthread_self() & 0xffff, i);
		if (na_s3_put_mem(s, key, key, strlen(key), &e) == -1)
			return (void *)1;
	}
	return NULL;
}

START_TEST(threads_share_a_client)
{
	static const struct fake_reply r[] = {{200, NULL, "", 0, false}};
	pthread_t t[4];
	struct na_s3 *s;
	void *rc;

	fake_script(r, 1);
	s = client(3, 0, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, put_many, s), 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &rc), 0);
		ck_assert_ptr_null(rc);
	}
	ck_assert_int_eq(fake_count(), 20);
	for (int i = 0; i < FAKE_MAX && i < 20; i++)
		ck_assert_str_eq(fk.reqs[i].body, strchr(fk.reqs[i].target + 1, '/') + 1);
	na_s3_free(s);
}
END_TEST

static const struct {
	const char *endpoint;
	long long part_size;
	const char *why;
} bad_opts[] = {
	{"ftp://h", 0, "http://host"},
	{"h:9000", 0, "http://host"},
	{"http://h:9000/prefix", 0, "without a path"},
	{"http://user@h", 0, "without a path"},
	{"http://h:0", 0, "bad port"},
	{"http://h:99999", 0, "bad port"},
	{"http://h:9x", 0, "bad port"},
	{"http://", 0, "without a path"},
	{"http://h", 1 << 20, "at least"},
};

START_TEST(options_are_checked)
{
	struct na_s3_opts o = {.endpoint = bad_opts[_i].endpoint,
			       .bucket = "ckpt",
			       .access_key = "AKID",
			       .secret_key = SECRET,
			       .part_size = bad_opts[_i].part_size};
	struct err e = ERR_INIT;

	ck_assert_ptr_null(na_s3_new(&o, &e));
	ck_assert_msg(strstr(e.msg, bad_opts[_i].why), "%s", e.msg);
	ck_assert_ptr_null(strstr(e.msg, SECRET));
}
END_TEST

START_TEST(options_defaults)
{
	struct na_s3_opts o = {.endpoint = "https://[::1]:9000/",
			       .bucket = "ckpt",
			       .region = "",
			       .access_key = "AKID",
			       .secret_key = SECRET};
	struct err e = ERR_INIT;
	struct na_s3 *s = na_s3_new(&o, &e);

	ck_assert_msg(s != NULL, "%s", e.msg);
	na_s3_free(s);
	o.secret_key = NULL;
	ck_assert_ptr_null(na_s3_new(&o, &e));
	na_s3_free(NULL);
}
END_TEST

Suite *suite_node_s3(void)
{
	Suite *s = suite_create("node_s3");
	TCase *pure = tcase_create("s3 signer");
	TCase *wire = tcase_create("s3 client");

	tcase_add_loop_test(pure, aws_documentation_examples, 0, (int)ARRAY_LEN(doc_cases));
	tcase_add_test(pure, header_values_are_canonical);
	tcase_add_loop_test(pure, uri_encoding, 0, (int)ARRAY_LEN(encodings));
	tcase_add_loop_test(pure, query_is_sorted_and_encoded, 0, (int)ARRAY_LEN(queries));
	tcase_add_test(pure, list_page_is_decoded);
	tcase_add_test(pure, list_page_last_and_stopped);
	tcase_add_loop_test(pure, list_page_malformed, 0, (int)ARRAY_LEN(bad_pages));
	tcase_add_loop_test(pure, options_are_checked, 0, (int)ARRAY_LEN(bad_opts));
	tcase_add_test(pure, options_defaults);
	suite_add_tcase(s, pure);

	tcase_add_checked_fixture(wire, fake_setup, fake_teardown);
	tcase_set_timeout(wire, 30);
	tcase_add_test(wire, put_is_signed_as_sent);
	tcase_add_test(wire, server_errors_are_retried);
	tcase_add_test(wire, attempts_run_out);
	tcase_add_test(wire, client_errors_are_final);
	tcase_add_test(wire, get_head_and_limits);
	tcase_add_test(wire, multipart_upload);
	tcase_add_test(wire, multipart_completion_answer_lost);
	tcase_add_test(wire, multipart_failure_aborts);
	tcase_add_test(wire, list_follows_tokens);
	tcase_add_test(wire, list_same_token_twice_fails);
	tcase_add_test(wire, silent_server_is_abandoned);
	tcase_add_test(wire, refused_connection);
	tcase_add_test(wire, threads_share_a_client);
	suite_add_tcase(s, wire);
	return s;
}
