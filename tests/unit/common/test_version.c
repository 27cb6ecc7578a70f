/* Unit tests for common/version: the number every program prints and every
 * health answer carries is well formed (MAJOR.MINOR.PATCH with an optional
 * -PRERELEASE, as semver 2.0 writes them), and --version's line is
 * "PROG VERSION". */
#include "common/version.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A numeric part of the core: digits, no leading zero unless it is "0".
 * Returns the character after it, or NULL. */
static const char *numeric(const char *s)
{
	const char *p = s;

	while (isdigit((unsigned char)*p))
		p++;
	if (p == s || (s[0] == '0' && p - s > 1))
		return NULL;
	return p;
}

/* Semver 2.0's version core with an optional pre-release, no build metadata:
 * the form common/module.mk lets VERSION have. */
static bool well_formed(const char *v)
{
	const char *p = v;

	for (int part = 0; part < 3; part++) {
		p = numeric(p);
		if (!p)
			return false;
		if (part < 2 && *p++ != '.')
			return false;
	}
	if (*p == '\0')
		return true;
	if (*p++ != '-' || *p == '\0')
		return false;
	/* Dot-separated identifiers of [0-9A-Za-z-], none empty. */
	for (const char *id = p; *p; p++) {
		if (*p == '.') {
			if (p == id || p[1] == '\0')
				return false;
			id = p + 1;
		} else if (!isalnum((unsigned char)*p) && *p != '-') {
			return false;
		}
	}
	return true;
}

/* The checker itself, on the forms it must take and refuse. */
START_TEST(checker_knows_the_form)
{
	static const struct {
		const char *v;
		bool ok;
	} cases[] = {
		{"0.1.0", true},      {"1.22.333", true}, {"1.0.0-rc.1", true},
		{"2.0.0-alpha", true}, {"0.9", false},     {"1.0", false},
		{"01.1.0", false},    {"1.1.0-", false},  {"1.1.0-rc..1", false},
		{"1.1.0+build", false}, {"v1.0.0", false}, {"1.0.0\n", false},
		{"", false},          {"1.0.0.0", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(well_formed(cases[i].v) == cases[i].ok, "`%s`", cases[i].v);
}
END_TEST

START_TEST(version_is_well_formed)
{
	const char *v = version_string();

	ck_assert_ptr_nonnull(v);
	ck_assert_msg(well_formed(v), "version `%s` is not MAJOR.MINOR.PATCH[-PRERELEASE]", v);
	ck_assert_ptr_eq(version_string(), v); /* one static string */
}
END_TEST

/* The number is the file's: a new VERSION must reach the programs
 * (common/module.mk rebuilds version.o from it).  CLOCHE_VERSION_FILE is
 * the tree's VERSION (tests/unit/module.mk). */
START_TEST(version_is_the_files)
{
	char text[64] = "";
	FILE *f = fopen(CLOCHE_VERSION_FILE, "re");

	ck_assert_msg(f != NULL, "cannot read %s", CLOCHE_VERSION_FILE);
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	ck_assert_str_eq(version_string(), text);
}
END_TEST

START_TEST(version_line)
{
	char want[64], out[64] = "";
	int saved = dup(1), fd = memfd_create("version", 0);
	ssize_t n;

	fflush(stdout);
	dup2(fd, 1);
	version_print("cloche-unit");
	dup2(saved, 1);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	snprintf(want, sizeof(want), "cloche-unit %s\n", version_string());
	ck_assert_str_eq(out, want);
}
END_TEST

Suite *suite_version(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, checker_knows_the_form);
	tcase_add_test(tc, version_is_well_formed);
	tcase_add_test(tc, version_is_the_files);
	tcase_add_test(tc, version_line);
	suite_add_tcase(s, tc);
	return s;
}
