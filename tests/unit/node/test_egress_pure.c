/* Unit tests for the pure parts of the egress proxy: the policy (parse,
 * JSON round trip, matching), the forbidden-address table and the request
 * head parser. */
#include "node-agent/na_egress.h"
#include "tests/unit/node/suites.h"

#include "common/json.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static json_t *js(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);

	ck_assert_msg(v != NULL, "bad test JSON %s: %s", text, je.text);
	return v;
}

static void parse_ok(const char *text, struct na_egress_policy *p)
{
	struct err e = ERR_INIT;
	AUTOJSON json_t *v = js(text);

	ck_assert_msg(na_egress_policy_parse(v, p, &e) == 0, "%s: %s", text, e.msg);
}

START_TEST(policy_none_forms)
{
	struct na_egress_policy p;
	struct err e = ERR_INIT;

	p.n = 5;
	ck_assert_int_eq(na_egress_policy_parse(NULL, &p, &e), 0);
	ck_assert_int_eq(p.n, 0);
	p.n = 5;
	parse_ok("null", &p);
	ck_assert_int_eq(p.n, 0);
	p.n = 5;
	parse_ok("\"none\"", &p);
	ck_assert_int_eq(p.n, 0);
	parse_ok("{\"allow\":[]}", &p);
	ck_assert_int_eq(p.n, 0);
	ck_assert(!na_egress_policy_allows(&p, "example.com", 443));
}
END_TEST

START_TEST(policy_parses_rules)
{
	struct na_egress_policy p;

	parse_ok("{\"allow\":[\"Example.COM.\",\"*.debian.org:443\",\"198.51.100.10:8080\","
		 "\"[2001:DB8:0::1]:443\",\"host:*\",\"2001:db8::2\",\"[2001:db8::3]\","
		 "\"under_score.example\"]}",
		 &p);
	ck_assert_int_eq(p.n, 8);
	ck_assert_str_eq(p.rules[0].host, "example.com");
	ck_assert(!p.rules[0].wildcard);
	ck_assert_int_eq(p.rules[0].port, 0);
	ck_assert_str_eq(p.rules[1].host, "debian.org");
	ck_assert(p.rules[1].wildcard);
	ck_assert_int_eq(p.rules[1].port, 443);
	ck_assert_str_eq(p.rules[2].host, "198.51.100.10");
	ck_assert_int_eq(p.rules[2].port, 8080);
	ck_assert_str_eq(p.rules[3].host, "2001:db8::1");
	ck_assert_int_eq(p.rules[3].port, 443);
	ck_assert_str_eq(p.rules[4].host, "host");
	ck_assert_int_eq(p.rules[4].port, -1);
	ck_assert_str_eq(p.rules[5].host, "2001:db8::2");
	ck_assert_int_eq(p.rules[5].port, 0);
	ck_assert_str_eq(p.rules[6].host, "2001:db8::3");
	ck_assert_int_eq(p.rules[6].port, 0);
}
END_TEST

START_TEST(policy_rejects)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{"\"all\"", "must be \"none\""},
		{"42", "must be \"none\""},
		{"[\"example.com\"]", "must be \"none\""},
		{"{}", "`allow` is required"},
		{"{\"allow\":[\"a.com\"],\"deny\":[]}", "unknown key `deny`"},
		{"{\"allow\":\"example.com\"}", "must be an array"},
		{"{\"allow\":[1]}", "allow[0] must be a string"},
		{"{\"allow\":[\"a.com\",\"\"]}", "allow[1] is empty"},
		{"{\"allow\":[\"a b.com\"]}", "is not a host name"},
		{"{\"allow\":[\"a..com\"]}", "is not a host name"},
		{"{\"allow\":[\".a.com\"]}", "is not a host name"},
		{"{\"allow\":[\".\"]}", "is not a host name"},
		{"{\"allow\":[\":443\"]}", "is not a host name"},
		{"{\"allow\":[\"a.com:0\"]}", "bad port"},
		{"{\"allow\":[\"a.com:65536\"]}", "bad port"},
		{"{\"allow\":[\"a.com:\"]}", "bad port"},
		{"{\"allow\":[\"a.com:-1\"]}", "bad port"},
		{"{\"allow\":[\"a.com:80x\"]}", "bad port"},
		{"{\"allow\":[\"*\"]}", "wildcard"},
		{"{\"allow\":[\"*example.com\"]}", "wildcard"},
		{"{\"allow\":[\"a.*.com\"]}", "is not a host name"},
		{"{\"allow\":[\"[2001:db8::1\"]}", "IPv6"},
		{"{\"allow\":[\"[example.com]:443\"]}", "IPv6"},
		{"{\"allow\":[\"[2001:db8::1]443\"]}", "expected `:port`"},
		{"{\"allow\":[\"*.[2001:db8::1]\"]}", "IPv6"},
		{"{\"allow\":[\"a:b:c\"]}", "not a host name or IP literal"},
		{"{\"allow\":[\"[2001:db8::1]:99999\"]}", "bad port"},
	};
	struct na_egress_policy p;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct err e = ERR_INIT;
		AUTOJSON json_t *v = js(cases[i].text);

		ck_assert_msg(na_egress_policy_parse(v, &p, &e) == -1, "accepted %s", cases[i].text);
		ck_assert_int_eq(e.http_status, 400);
		ck_assert_msg(strncmp(e.msg, "`egress`: ", 10) == 0, "%s", e.msg);
		ck_assert_msg(strstr(e.msg, cases[i].needle) != NULL, "%s: `%s` lacks `%s`",
			      cases[i].text, e.msg, cases[i].needle);
		ck_assert_int_eq(p.n, 0);
	}
}
END_TEST

START_TEST(policy_rejects_long_names_and_many_rules)
{
	struct na_egress_policy p;
	struct err e = ERR_INIT;
	char label[64], name[300];
	AUTOJSON json_t *arr = json_array();
	AUTOJSON json_t *o = NULL;
	AUTOJSON json_t *o2 = NULL;
	int i;

	/* A label of 64 characters. */
	memset(label, 'a', 64);
	snprintf(name, sizeof(name), "%.64s.com", label);
	o = json_pack("{s:[s]}", "allow", name);
	ck_assert_int_eq(na_egress_policy_parse(o, &p, &e), -1);
	ck_assert_int_eq(e.http_status, 400);
	/* A name of 254 characters (labels of 9 and dots). */
	memset(name, 0, sizeof(name));
	for (i = 0; i < 25; i++)
		strcat(name, "abcdefghi.");
	strcat(name, "abcd");
	ck_assert_uint_eq(strlen(name), 254);
	json_decref(o);
	o = json_pack("{s:[s]}", "allow", name);
	ck_assert_int_eq(na_egress_policy_parse(o, &p, &e), -1);
	ck_assert_msg(strstr(e.msg, "longer than 253") != NULL, "%s", e.msg);
	/* 253 is fine. */
	name[253] = '\0';
	json_decref(o);
	o = json_pack("{s:[s]}", "allow", name);
	ck_assert_msg(na_egress_policy_parse(o, &p, &e) == 0, "%s", e.msg);

	for (i = 0; i < NA_EGRESS_MAX_RULES; i++)
		json_array_append_new(arr, json_sprintf("h%d.example", i));
	o2 = json_pack("{s:O}", "allow", arr);
	ck_assert_msg(na_egress_policy_parse(o2, &p, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(p.n, NA_EGRESS_MAX_RULES);
	json_array_append_new(arr, json_string("one-more.example"));
	ck_assert_int_eq(na_egress_policy_parse(o2, &p, &e), -1);
	ck_assert_int_eq(e.http_status, 400);
	ck_assert_msg(strstr(e.msg, "at most 64") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(policy_json_round_trip)
{
	static const char *text = "{\"allow\":[\"example.com\",\"*.debian.org:443\","
				  "\"198.51.100.10:8080\",\"[2001:db8::1]:443\",\"host:*\","
				  "\"[2001:db8::2]\",\"*.any.example:*\"]}";
	struct na_egress_policy p, q;
	struct err e = ERR_INIT;
	AUTOJSON json_t *v = NULL;
	AUTOJSON json_t *none = NULL;
	AUTOFREE char *s = NULL;

	parse_ok(text, &p);
	v = na_egress_policy_json(&p);
	ck_assert_ptr_nonnull(v);
	s = cj_dump(v);
	ck_assert_str_eq(s, text);
	ck_assert_msg(na_egress_policy_parse(v, &q, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(q.n, p.n);
	for (int i = 0; i < p.n; i++) {
		ck_assert_str_eq(q.rules[i].host, p.rules[i].host);
		ck_assert_int_eq(q.rules[i].wildcard, p.rules[i].wildcard);
		ck_assert_int_eq(q.rules[i].port, p.rules[i].port);
	}

	p.n = 0;
	none = na_egress_policy_json(&p);
	ck_assert(json_is_string(none));
	ck_assert_str_eq(json_string_value(none), "none");
	q.n = 3;
	ck_assert_int_eq(na_egress_policy_parse(none, &q, &e), 0);
	ck_assert_int_eq(q.n, 0);
}
END_TEST

START_TEST(policy_allows)
{
	static const struct {
		const char *host;
		int port;
		bool allowed;
	} cases[] = {
		{"example.com", 443, true},
		{"example.com", 80, true},
		{"EXAMPLE.Com.", 443, true},
		{"example.com", 8080, false},
		{"www.example.com", 443, false}, /* exact names do not cover subdomains */
		{"debian.org", 443, false},      /* *.debian.org: subdomains only */
		{"deb.debian.org", 443, true},
		{"a.b.DEBIAN.org.", 443, true},
		{"deb.debian.org", 80, false},   /* the wildcard rule names 443 */
		{"baddebian.org", 443, false},
		{"debian.org.evil.net", 443, false},
		{"198.51.100.10", 8080, true},
		{"198.51.100.10", 443, false},
		{"host", 1, true},
		{"host", 65535, true},
		{"hostx", 80, false},
		{"2001:db8::1", 443, true},
		{"[2001:db8::1]", 443, true},
		{"2001:DB8:0:0::1", 443, true},
		{"2001:db8::1", 80, false},
		{"2001:db8::2", 80, true},
		{"2001:db8::2", 22, false},
		{"", 443, false},
		{".", 443, false},
		{"[", 443, false},
		{"exa mple.com", 443, false},
	};
	struct na_egress_policy p;
	size_t i;

	parse_ok("{\"allow\":[\"example.com\",\"*.debian.org:443\",\"198.51.100.10:8080\","
		 "\"[2001:db8::1]:443\",\"host:*\",\"[2001:db8::2]\"]}",
		 &p);
	for (i = 0; i < ARRAY_LEN(cases); i++)
		ck_assert_msg(na_egress_policy_allows(&p, cases[i].host, cases[i].port) ==
				      cases[i].allowed,
			      "%s:%d should be %s", cases[i].host, cases[i].port,
			      cases[i].allowed ? "allowed" : "refused");
	p.n = 0;
	ck_assert(!na_egress_policy_allows(&p, "example.com", 443));
}
END_TEST

static bool forbidden_text(const char *a)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};

	if (inet_pton(AF_INET, a, &s4.sin_addr) == 1)
		return na_egress_addr_forbidden((struct sockaddr *)&s4, sizeof(s4));
	ck_assert_msg(inet_pton(AF_INET6, a, &s6.sin6_addr) == 1, "bad test address %s", a);
	return na_egress_addr_forbidden((struct sockaddr *)&s6, sizeof(s6));
}

/* The documentation addresses below that must be allowed are none that a
 * test configures on this host (tests/lib/inet.sh takes .1 and .10 of
 * 198.51.100/24 and 203.0.113/24 while the integration suites run beside
 * these): a host's own address is forbidden. */
START_TEST(addr_table)
{
	static const struct {
		const char *addr;
		bool forbidden;
	} cases[] = {
		{"0.0.0.0", true}, {"0.255.1.2", true}, {"10.0.2.2", true}, {"10.255.255.255", true},
		{"100.64.0.1", true}, {"100.127.255.254", true}, {"100.63.255.255", false},
		{"100.128.0.0", false}, {"127.0.0.1", true}, {"127.200.0.1", true},
		{"169.254.169.254", true}, {"169.253.0.1", false}, {"172.16.0.1", true},
		{"172.31.255.255", true}, {"172.15.255.255", false}, {"172.32.0.0", false},
		{"192.0.0.8", true}, {"192.0.1.1", false}, {"192.168.1.1", true},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.17.255.255", false},
		{"198.20.0.0", false}, {"224.0.0.1", true}, {"239.255.255.250", true},
		{"240.0.0.1", true}, {"255.255.255.255", true},
		/* documentation ranges and ordinary public addresses */
		{"192.0.2.1", false}, {"198.51.100.7", false}, {"203.0.113.200", false},
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"223.255.255.255", false},
		/* IPv6 */
		{"::", true}, {"::1", true}, {"fc00::1", true}, {"fdff:ffff::1", true},
		{"fe80::1", true}, {"febf::1", true}, {"fec0::1", true}, {"ff02::1", true},
		{"2001:db8::1", false}, {"2606:4700::1111", false}, {"fbff::1", false},
		/* IPv4 inside IPv6 */
		{"::ffff:127.0.0.1", true}, {"::ffff:10.1.2.3", true},
		{"::ffff:198.51.100.7", false}, {"::127.0.0.1", true}, {"::198.51.100.7", false},
		{"::ffff:0:169.254.169.254", true}, {"::ffff:0:203.0.113.9", false},
		{"64:ff9b::7f00:1", true}, {"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::198.51.100.7", false}, {"2002:7f00:1::1", true},
		/* local-use NAT64 (64:ff9b:1::/48), 127.0.0.1 at each placement */
		{"64:ff9b:1:7f00:0:100::", true},      /* /48 */
		{"64:ff9b:1:7f:0:1::", true},          /* /56 */
		{"64:ff9b:1:0:7f:0:100:0", true},      /* /64 */
		{"64:ff9b:1::7f00:1", true},           /* /96 */
		{"64:ff9b:1::a9fe:a9fe", true},        /* /96, the metadata address */
		/* public however the prefix is read; one that reads as private at
		 * any placement (often 0.x.x.x from zero bits) is refused */
		{"64:ff9b:1:3333:33:3333:c633:6407", false},
		{"64:ff9b:1:c633:6400:700::", true},
		/* Teredo: the client address is stored inverted in the last 32 bits */
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", true},  /* client 127.0.0.1 */
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", true},  /* client 10.0.0.1 */
		{"2001:0:a00:1:8000:63bf:3fff:fdd2", true},      /* server 10.0.0.1 */
		{"2001:0:4136:e378:8000:63bf:39cc:9bf8", false}, /* 198.51.100.7 */
		{"2002:c633:6407::1", false},
	};
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++)
		ck_assert_msg(forbidden_text(cases[i].addr) == cases[i].forbidden, "%s should be %s",
			      cases[i].addr, cases[i].forbidden ? "forbidden" : "allowed");
}
END_TEST

START_TEST(addr_other_families_and_short)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr sa = {.sa_family = AF_UNIX};

	inet_pton(AF_INET, "198.51.100.7", &s4.sin_addr);
	ck_assert(!na_egress_addr_forbidden((struct sockaddr *)&s4, sizeof(s4)));
	ck_assert(na_egress_addr_forbidden((struct sockaddr *)&s4, 4));
	ck_assert(na_egress_addr_forbidden(&sa, sizeof(sa)));
	ck_assert(na_egress_addr_forbidden(NULL, 0));
}
END_TEST

/* Every address this host has, whatever its range, is forbidden. */
START_TEST(addr_host_interfaces)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	ck_assert_int_eq(getifaddrs(&ifa), 0);
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		ck_assert(na_egress_addr_forbidden(i->ifa_addr,
						   i->ifa_addr->sa_family == AF_INET
							   ? sizeof(struct sockaddr_in)
							   : sizeof(struct sockaddr_in6)));
		n++;
	}
	freeifaddrs(ifa);
	ck_assert_int_gt(n, 0);
	ck_assert(forbidden_text("127.0.0.1"));
}
END_TEST

/* An address outside every fixed range becomes forbidden once it is on an
 * interface.  Needs a network namespace of its own (root, forked test);
 * otherwise it reports itself skipped. */
START_TEST(addr_host_public_address)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int fd;

	if ((getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0) ||
	    unshare(CLONE_NEWNET) == -1) {
		fprintf(stderr, "# addr_host_public_address skipped: no netns of its own\n");
		return;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "198.51.100.77", &sin->sin_addr);
	ck_assert_int_eq(ioctl(fd, SIOCSIFADDR, &ifr), 0);
	close(fd);
	ck_assert(forbidden_text("198.51.100.77"));
	ck_assert(forbidden_text("::ffff:198.51.100.77"));
	ck_assert(!forbidden_text("198.51.100.78"));
}
END_TEST

static int head(const char *text, struct na_egress_req *r, struct err *e)
{
	return na_egress_parse_head(text, strlen(text), r, e);
}

START_TEST(head_connect)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;
	const char *t = "CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
			"User-Agent: curl\r\n\r\nTLS";

	ck_assert_int_eq(head(t, &r, &e), (int)strlen(t) - 3);
	ck_assert(r.connect);
	ck_assert_str_eq(r.method, "CONNECT");
	ck_assert_str_eq(r.host, "Example.com");
	ck_assert_int_eq(r.port, 443);

	ck_assert_int_gt(head("CONNECT [2001:db8::1]:8443 HTTP/1.0\r\n\r\n", &r, &e), 0);
	ck_assert(r.connect);
	ck_assert_str_eq(r.host, "2001:db8::1");
	ck_assert_int_eq(r.port, 8443);

	/* Bare LF line ends are accepted too. */
	t = "CONNECT a.b:1 HTTP/1.1\nHost: a.b\n\n";
	ck_assert_int_eq(head(t, &r, &e), (int)strlen(t));
	ck_assert_str_eq(r.host, "a.b");
	ck_assert_int_eq(r.port, 1);
}
END_TEST

START_TEST(head_absolute)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;

	ck_assert_int_gt(head("GET http://Example.com/a/b?c=d HTTP/1.1\r\nHost: x\r\n\r\n", &r, &e),
			 0);
	ck_assert(!r.connect);
	ck_assert_str_eq(r.method, "GET");
	ck_assert_str_eq(r.host, "Example.com");
	ck_assert_int_eq(r.port, 80);
	ck_assert_uint_eq(r.path_len, 8);
	ck_assert_int_eq(memcmp(r.path, "/a/b?c=d", 8), 0);

	ck_assert_int_gt(head("POST HTTP://198.51.100.7:8080/x HTTP/1.0\r\n\r\n", &r, &e), 0);
	ck_assert_str_eq(r.method, "POST");
	ck_assert_str_eq(r.host, "198.51.100.7");
	ck_assert_int_eq(r.port, 8080);
	ck_assert_uint_eq(r.path_len, 2);
	ck_assert_int_eq(memcmp(r.path, "/x", 2), 0);

	ck_assert_int_gt(head("GET http://example.com HTTP/1.1\r\n\r\n", &r, &e), 0);
	ck_assert_int_eq(r.port, 80);
	ck_assert_uint_eq(r.path_len, 1);
	ck_assert_int_eq(r.path[0], '/');

	ck_assert_int_gt(head("GET http://[2001:db8::1]:81?q HTTP/1.1\r\n\r\n", &r, &e), 0);
	ck_assert_str_eq(r.host, "2001:db8::1");
	ck_assert_int_eq(r.port, 81);
	ck_assert_uint_eq(r.path_len, 2);
	ck_assert_int_eq(memcmp(r.path, "?q", 2), 0);
}
END_TEST

START_TEST(head_incomplete)
{
	static const char *cases[] = {
		"", "C", "CONNECT", "CONNECT example.com:443 HTTP/1.1", "CONNECT a:1 HTTP/1.1\r\n",
		"CONNECT a:1 HTTP/1.1\r\nHost: a\r\n", "CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r",
	};
	struct na_egress_req r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct err e = ERR_INIT;

		ck_assert_msg(head(cases[i], &r, &e) == 0, "`%s`: %s", cases[i], e.msg);
	}
}
END_TEST

START_TEST(head_malformed)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{"\x16\x03\x01\x02\x00", "control character"},
		{"GET / HTTP/1.1\r\n\r\n", "not a proxy request"},
		{"GET https://example.com/ HTTP/1.1\r\n\r\n", "CONNECT"},
		{"GET ftp://example.com/ HTTP/1.1\r\n\r\n", "not a proxy request"},
		{"CONNECT example.com HTTP/1.1\r\n\r\n", "host:port"},
		{"CONNECT example.com:0 HTTP/1.1\r\n\r\n", "bad port"},
		{"CONNECT example.com:70000 HTTP/1.1\r\n\r\n", "bad port"},
		{"CONNECT example.com:https HTTP/1.1\r\n\r\n", "bad port"},
		{"CONNECT :443 HTTP/1.1\r\n\r\n", "empty host"},
		{"CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", "brackets"},
		{"CONNECT [2001:db8::1 HTTP/1.1\r\n\r\n", "IPv6"},
		{"CONNECT [nothex]:443 HTTP/1.1\r\n\r\n", "IPv6"},
		{"CONNECT [::1]x:443 HTTP/1.1\r\n\r\n", "after the IPv6"},
		{"CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", "user information"},
		{"CONNECT exa$mple.com:443 HTTP/1.1\r\n\r\n", "invalid character"},
		{"GET http:///x HTTP/1.1\r\n\r\n", "empty host"},
		{"GET http://a.com/ HTTP/2.0\r\n\r\n", "HTTP/1.x"},
		{"GET http://a.com/ HTTP/1.1 \r\n\r\n", "HTTP/1.x"},
		{"GET http://a.com/\r\n\r\n", "request line"},
		{"GET  http://a.com/ HTTP/1.1\r\n\r\n", "request line"},
		{"G(T http://a.com/ HTTP/1.1\r\n\r\n", "method"},
		{"AVERYLONGMETHODNAME http://a.com/ HTTP/1.1\r\n\r\n", "request line"},
		{"\r\n\r\n", "request line"},
		{"GET http://a.com/ HTTP/1.1\r\nNoColon\r\n\r\n", "header line"},
		{"GET http://a.com/ HTTP/1.1\r\n: empty\r\n\r\n", "header line"},
		{"GET http://a.com/ HTTP/1.1\r\nA b: c\r\n\r\n", "header name"},
		{"GET http://a.com/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", "header"},
		{"GET http://a.com/ HTTP/1.1\rX: y\r\n\r\n", "bare CR"},
	};
	struct na_egress_req r;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		struct err e = ERR_INIT;

		ck_assert_msg(head(cases[i].text, &r, &e) == -1, "accepted `%s`", cases[i].text);
		ck_assert_int_eq(e.http_status, 400);
		ck_assert_msg(strstr(e.msg, cases[i].needle) != NULL, "`%s`: `%s` lacks `%s`",
			      cases[i].text, e.msg, cases[i].needle);
	}
}
END_TEST

START_TEST(head_oversized)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;
	size_t cap = NA_EGRESS_MAX_HEAD + 100, n;
	AUTOFREE char *b = malloc(cap);
	const char *start = "GET http://a.com/ HTTP/1.1\r\nX: ";

	ck_assert_ptr_nonnull(b);
	n = strlen(start);
	memcpy(b, start, n);
	memset(b + n, 'v', cap - n);
	/* Short of the limit: still incomplete. */
	ck_assert_int_eq(na_egress_parse_head(b, NA_EGRESS_MAX_HEAD - 1, &r, &e), 0);
	/* At the limit without an end: refused. */
	ck_assert_int_eq(na_egress_parse_head(b, NA_EGRESS_MAX_HEAD, &r, &e), -1);
	ck_assert_int_eq(e.http_status, 431);
	ck_assert_msg(strstr(e.msg, "exceeds") != NULL, "%s", e.msg);
	/* A head of exactly the limit is fine, one byte more is not. */
	memcpy(b + NA_EGRESS_MAX_HEAD - 4, "\r\n\r\n", 4);
	ck_assert_int_eq(na_egress_parse_head(b, cap, &r, &e), NA_EGRESS_MAX_HEAD);
	memcpy(b + NA_EGRESS_MAX_HEAD - 4, "vvvv", 4);
	memcpy(b + NA_EGRESS_MAX_HEAD - 3, "\r\n\r\n", 4);
	ck_assert_int_eq(na_egress_parse_head(b, cap, &r, &e), -1);
	ck_assert_int_eq(e.http_status, 431);
}
END_TEST

Suite *suite_node_egress_pure(void)
{
	Suite *s = suite_create("egress_pure");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, policy_none_forms);
	tcase_add_test(tc, policy_parses_rules);
	tcase_add_test(tc, policy_rejects);
	tcase_add_test(tc, policy_rejects_long_names_and_many_rules);
	tcase_add_test(tc, policy_json_round_trip);
	tcase_add_test(tc, policy_allows);
	tcase_add_test(tc, addr_table);
	tcase_add_test(tc, addr_other_families_and_short);
	tcase_add_test(tc, addr_host_interfaces);
	tcase_add_test(tc, addr_host_public_address);
	tcase_add_test(tc, head_connect);
	tcase_add_test(tc, head_absolute);
	tcase_add_test(tc, head_incomplete);
	tcase_add_test(tc, head_malformed);
	tcase_add_test(tc, head_oversized);
	suite_add_tcase(s, tc);
	return s;
}
