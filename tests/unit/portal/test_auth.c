/* Unit tests for portal/pt_auth (API keys) and common/sbtoken (sandbox and
 * share tokens, the view secret): made keys check, wrong ones and revoked
 * ones do not; tokens are bound to their sandbox, key, mode and expiry. */
#include "common/sbtoken.h"
#include "portal/pt_auth.h"
#include "tests/unit/portal/suites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static char path[128];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/pt-auth-XXXXXX")));
	snprintf(path, sizeof(path), "%s/p.db", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(keys_check_and_revoke)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	char key[PT_KEY_MAX], hdr[PT_KEY_MAX + 16], bad[PT_KEY_MAX + 16];
	struct pt_key k;
	struct pt_caller who;

	ck_assert_int_eq(pt_auth_key_create(st, "ci", "user", key, &k, &e), 0);
	ck_assert_int_eq(strncmp(key, "ck_", 3), 0);
	ck_assert_int_eq(strncmp(key + 3, k.id, 12), 0);
	ck_assert_ptr_null(strstr(k.hash, key + 16)); /* the secret is not stored */
	snprintf(hdr, sizeof(hdr), "Bearer %s", key);
	ck_assert_int_eq(pt_auth_check(st, hdr, &who, &e), 1);
	ck_assert_str_eq(who.key_id, k.id);
	ck_assert(!who.admin);
	snprintf(bad, sizeof(bad), "bearer %s", key); /* the scheme is case-insensitive */
	ck_assert_int_eq(pt_auth_check(st, bad, &who, &e), 1);
	strcpy(bad, hdr);
	bad[strlen(bad) - 1] ^= 1; /* one bit of the secret */
	ck_assert_int_eq(pt_auth_check(st, bad, &who, &e), 0);
	ck_assert_int_eq(pt_auth_check(st, "Bearer ck_zzzzzzzzzzzz_abc", &who, &e), 0);
	ck_assert_int_eq(pt_auth_check(st, "Basic abc", &who, &e), 0);
	ck_assert_int_eq(pt_auth_check(st, NULL, &who, &e), 0);
	ck_assert_int_eq(pt_store_key_revoke(st, k.id, 5, &e), 0);
	ck_assert_int_eq(pt_auth_check(st, hdr, &who, &e), 0);
	ck_assert_int_eq(pt_store_key_revoke(st, "000000000000", 5, &e), -1);
	ck_assert_int_eq(e.http_status, 404);
	ck_assert_int_eq(pt_auth_key_create(st, "x", "root", key, NULL, &e), -1);
	ck_assert_int_eq(e.http_status, 400);
	ck_assert_int_eq(pt_auth_key_create(st, "boss", "admin", key, NULL, &e), 0);
	snprintf(hdr, sizeof(hdr), "Bearer %s", key);
	ck_assert_int_eq(pt_auth_check(st, hdr, &who, &e), 1);
	ck_assert(who.admin);
	ck_assert_int_eq(pt_store_key_admins(st, &e), 1);
	pt_store_close(st);
}
END_TEST

START_TEST(node_credential)
{
	ck_assert(pt_auth_node("Bearer secret-credential-1", "secret-credential-1", 19));
	ck_assert(!pt_auth_node("Bearer secret-credential-2", "secret-credential-1", 19));
	ck_assert(!pt_auth_node("Bearer secret-credential-1x", "secret-credential-1", 19));
	ck_assert(!pt_auth_node("secret-credential-1", "secret-credential-1", 19));
	ck_assert(!pt_auth_node("Bearer ", "", 0));
}
END_TEST

START_TEST(tokens_bind_sandbox_and_key)
{
	static const char k1[] = "0123456789abcdef0123456789abcdef";
	static const char k2[] = "0123456789abcdef0123456789abcdeF";
	char t[SBTOKEN_MAX], id[32], forged[SBTOKEN_MAX];
	struct err e = ERR_INIT;

	ck_assert_int_eq(sbtoken_make(k1, 32, "sb-00aa", t, sizeof(t), &e), 0);
	ck_assert_int_eq(strncmp(t, "st1.sb-00aa.", 12), 0);
	ck_assert(sbtoken_verify(k1, 32, t, id, sizeof(id)));
	ck_assert_str_eq(id, "sb-00aa");
	ck_assert(!sbtoken_verify(k2, 32, t, id, sizeof(id)));
	/* The MAC of one sandbox does not open another. */
	snprintf(forged, sizeof(forged), "st1.sb-00ab.%s", strrchr(t, '.') + 1);
	ck_assert(!sbtoken_verify(k1, 32, forged, id, sizeof(id)));
	ck_assert(!sbtoken_verify(k1, 32, "st1.sb-00aa.", id, sizeof(id)));
	ck_assert(!sbtoken_verify(k1, 32, "st1..abc", id, sizeof(id)));
	ck_assert(!sbtoken_verify(k1, 32, "st2.sb-00aa.x", id, sizeof(id)));
	t[strlen(t) - 1] = t[strlen(t) - 1] == 'A' ? 'B' : 'A';
	ck_assert(!sbtoken_verify(k1, 32, t, id, sizeof(id)));
	ck_assert_int_eq(sbtoken_make(k1, 32, "a.b", t, sizeof(t), &e), -1);
}
END_TEST

START_TEST(share_tokens)
{
	static const char k1[] = "0123456789abcdef0123456789abcdef", k2[] = "0123456789abcdef0123456789abcdeX";
	struct shtoken t = {.id = "sb-00aa", .share = "sh_Ab-c_1", .mode = 'v', .expires = 1900000000}, u;
	char tok[SHTOKEN_MAX], forged[SHTOKEN_MAX], view[48], view2[48];
	struct err e = ERR_INIT;

	ck_assert_int_eq(shtoken_make(k1, 32, &t, tok, sizeof(tok), &e), 0);
	ck_assert_int_eq(strncmp(tok, "sh1.sb-00aa.sh_Ab-c_1.v.1900000000.", 35), 0);
	ck_assert(shtoken_verify(k1, 32, tok, &u));
	ck_assert_str_eq(u.id, "sb-00aa");
	ck_assert_str_eq(u.share, "sh_Ab-c_1");
	ck_assert_int_eq(u.mode, 'v');
	ck_assert_int_eq(u.expires, 1900000000);
	ck_assert(!shtoken_verify(k2, 32, tok, &u));
	/* mode, expiry and sandbox are under the MAC */
	snprintf(forged, sizeof(forged), "sh1.sb-00aa.sh_Ab-c_1.c.1900000000.%s", strrchr(tok, '.') + 1);
	ck_assert(!shtoken_verify(k1, 32, forged, &u));
	snprintf(forged, sizeof(forged), "sh1.sb-00aa.sh_Ab-c_1.v.1999999999.%s", strrchr(tok, '.') + 1);
	ck_assert(!shtoken_verify(k1, 32, forged, &u));
	ck_assert(!shtoken_verify(k1, 32, "sh1.sb-00aa.x.v.1", &u));
	ck_assert(!shtoken_verify(k1, 32, "st1.sb-00aa.x", &u));
	/* a sandbox token is not a share token, nor the other way */
	ck_assert(!sbtoken_verify(k1, 32, tok, u.id, sizeof(u.id)));
	t.mode = 'x';
	ck_assert_int_eq(shtoken_make(k1, 32, &t, tok, sizeof(tok), &e), -1);
	t.mode = 'c';
	snprintf(t.share, sizeof(t.share), "a.b");
	ck_assert_int_eq(shtoken_make(k1, 32, &t, tok, sizeof(tok), &e), -1);
	/* the view secret: fixed for a secret, another for another */
	ck_assert_int_eq(sbtoken_view_secret("s3cret-of-a-sandbox", view, sizeof(view)), 0);
	ck_assert_int_eq(strlen(view), 32);
	ck_assert_int_eq(sbtoken_view_secret("s3cret-of-a-sandbox", view2, sizeof(view2)), 0);
	ck_assert_str_eq(view, view2);
	ck_assert_int_eq(sbtoken_view_secret("s3cret-of-b-sandbox", view2, sizeof(view2)), 0);
	ck_assert_str_ne(view, view2);
	ck_assert_int_eq(sbtoken_view_secret("x", view, 20), -1);
}
END_TEST

START_TEST(token_key_file)
{
	char p[160];
	unsigned char key[128];
	struct err e = ERR_INIT;
	int n, m;
	FILE *f;

	snprintf(p, sizeof(p), "%s/sub/token.key", dir);
	ck_assert_int_eq(sbtoken_key_load(p, false, key, sizeof(key), &e), -1);
	n = sbtoken_key_load(p, true, key, sizeof(key), &e);
	ck_assert_int_ge(n, SBTOKEN_KEY_MIN);
	m = sbtoken_key_load(p, true, key, sizeof(key), &e); /* the same key again */
	ck_assert_int_eq(m, n);
	f = fopen(p, "w");
	fputs("short\n", f);
	fclose(f);
	ck_assert_int_eq(sbtoken_key_load(p, true, key, sizeof(key), &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "shorter"));
}
END_TEST

Suite *suite_portal_auth(void)
{
	Suite *s = suite_create("portal_auth");
	TCase *tc = tcase_create("keys");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, keys_check_and_revoke);
	tcase_add_test(tc, node_credential);
	tcase_add_test(tc, tokens_bind_sandbox_and_key);
	tcase_add_test(tc, share_tokens);
	tcase_add_test(tc, token_key_file);
	suite_add_tcase(s, tc);
	return s;
}
