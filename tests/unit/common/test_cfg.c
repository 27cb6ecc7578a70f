/* Unit tests for common/cfg: precedence of the four sources, value syntax
 * of each type, errors that cite their source, --help and --version,
 * boolean negation and the arguments left after flags. */
#include "common/cfg.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const struct cfg_opt opts[] = {
	{"health-port", CFG_INT, "8080", "port of the health endpoint"},
	{"name", CFG_STR, "cloche", "instance name"},
	{"verbose", CFG_BOOL, "false", "log debug lines"},
	{"idle-timeout", CFG_DURATION, "5m", "hibernate after this long idle"},
	{"max-body", CFG_SIZE, "1M", "largest request body"},
	{"token", CFG_STR, NULL, "API token"},
};

static char conf_path[64];

/* The environment is process-wide: start every test from a clean one. */
static void setup(void)
{
	static const char *const vars[] = {
		"CKT_HEALTH_PORT", "CKT_NAME", "CKT_VERBOSE", "CKT_IDLE_TIMEOUT",
		"CKT_MAX_BODY", "CKT_TOKEN", "CKT_CONFIG",
	};
	for (size_t i = 0; i < ARRAY_LEN(vars); i++)
		unsetenv(vars[i]);
	conf_path[0] = '\0';
}

static void teardown(void)
{
	if (conf_path[0])
		unlink(conf_path);
	setup();
}

static const char *write_conf(const char *text)
{
	int fd;

	if (conf_path[0])
		unlink(conf_path); /* one file per test: drop the previous one */
	snprintf(conf_path, sizeof(conf_path), "/tmp/cloche-cfg-XXXXXX");
	fd = mkstemp(conf_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(util_write_all(fd, text, strlen(text)), 0);
	close(fd);
	return conf_path;
}

/* Loads argv (NULL-terminated, without argv[0]); returns cfg_load's result. */
static int load(struct cfg **c, struct err *e, const char *const *args)
{
	char *argv[16] = {"prog"};
	int argc = 1;

	for (; args && args[argc - 1]; argc++)
		argv[argc] = (char *)args[argc - 1];
	*c = cfg_new(opts, ARRAY_LEN(opts), "CKT");
	ck_assert_ptr_nonnull(*c);
	return cfg_load(*c, argc, argv, e);
}

START_TEST(defaults_apply)
{
	struct cfg *c;
	struct err e = ERR_INIT;

	ck_assert_int_eq(load(&c, &e, NULL), 0);
	ck_assert_int_eq(cfg_int(c, "health-port"), 8080);
	ck_assert_str_eq(cfg_str(c, "name"), "cloche");
	ck_assert(!cfg_bool(c, "verbose"));
	ck_assert_int_eq(cfg_duration_ms(c, "idle-timeout"), 300000);
	ck_assert_uint_eq(cfg_size(c, "max-body"), 1 << 20);
	ck_assert_ptr_null(cfg_str(c, "token"));
	ck_assert_str_eq(cfg_source(c, "name"), "default");
	ck_assert_str_eq(cfg_source(c, "token"), "unset");
	cfg_free(c);
}
END_TEST

/* Which sources set health-port, and which must win. */
static const struct {
	bool file, env, flag;
	long long want;
	const char *source;
} precedence[] = {
	{false, false, false, 8080, "default"},
	{true, false, false, 1001, "FILE:2"},
	{false, true, false, 1002, "CKT_HEALTH_PORT"},
	{true, true, false, 1002, "CKT_HEALTH_PORT"},
	{false, false, true, 1003, "--health-port"},
	{true, false, true, 1003, "--health-port"},
	{true, true, true, 1003, "--health-port"},
};

START_TEST(sources_override_in_order)
{
	const char *args[6] = {NULL};
	struct err e = ERR_INIT;
	char want_src[96];
	struct cfg *c;
	int n = 0;

	if (precedence[_i].file) {
		args[n++] = "--config";
		args[n++] = write_conf("# test\nhealth-port = 1001\n");
	}
	if (precedence[_i].env)
		setenv("CKT_HEALTH_PORT", "1002", 1);
	if (precedence[_i].flag)
		args[n++] = "--health-port=1003";
	ck_assert_msg(load(&c, &e, args) == 0, "%s", e.msg);
	ck_assert_int_eq(cfg_int(c, "health-port"), precedence[_i].want);
	if (strcmp(precedence[_i].source, "FILE:2") == 0)
		snprintf(want_src, sizeof(want_src), "%s:2", conf_path);
	else
		snprintf(want_src, sizeof(want_src), "%s", precedence[_i].source);
	ck_assert_str_eq(cfg_source(c, "health-port"), want_src);
	cfg_free(c);
}
END_TEST

/* Arguments that must be refused, and the sentence that says why. */
static const struct {
	const char *args[4];
	const char *env;
	const char *msg;
} bad_values[] = {
	{{"--health-port=abc"}, NULL, "--health-port: `abc` is not an integer"},
	{{"--health-port", "12x"}, NULL, "--health-port: `12x` is not an integer"},
	{{"--health-port= 5"}, NULL, "--health-port: ` 5` is not an integer"},
	{{"--health-port=99999999999999999999"}, NULL,
	 "--health-port: `99999999999999999999` is out of range"},
	{{"--verbose=maybe"}, NULL, "--verbose: `maybe` is not a boolean (true or false)"},
	{{"--idle-timeout=5"}, NULL,
	 "--idle-timeout: `5` is not a duration (such as 500ms, 5s, 2m, 1h)"},
	{{"--idle-timeout=-1s"}, NULL,
	 "--idle-timeout: `-1s` is not a duration (such as 500ms, 5s, 2m, 1h)"},
	{{"--max-body=12X"}, NULL, "--max-body: `12X` is not a size (such as 4096, 64K, 64M, 2G)"},
	{{"--max-body=99999999999T"}, NULL, "--max-body: `99999999999T` is out of range"},
	{{"--bogus"}, NULL, "unknown flag `--bogus` (see --help)"},
	{{"--bogus=1"}, NULL, "unknown flag `--bogus` (see --help)"},
	{{"--no-name"}, NULL, "unknown flag `--no-name` (see --help)"},
	{{"-x"}, NULL, "unknown flag `-x` (see --help)"},
	{{"--name"}, NULL, "--name: missing value"},
	{{NULL}, "abc", "CKT_HEALTH_PORT: `abc` is not an integer"},
	{{"--config=/nonexistent/cloche.conf"}, NULL,
	 "open config `/nonexistent/cloche.conf`: No such file or directory"},
};

START_TEST(bad_values_are_explained)
{
	struct err e = ERR_INIT;
	struct cfg *c;

	if (bad_values[_i].env)
		setenv("CKT_HEALTH_PORT", bad_values[_i].env, 1);
	ck_assert_int_eq(load(&c, &e, bad_values[_i].args), -1);
	ck_assert_str_eq(e.msg, bad_values[_i].msg);
	cfg_free(c);
}
END_TEST

/* Value syntax of durations and sizes. */
static const struct {
	enum cfg_type type;
	const char *text;
	unsigned long long want;
} good_values[] = {
	{CFG_DURATION, "0", 0}, {CFG_DURATION, "500ms", 500}, {CFG_DURATION, "5s", 5000},
	{CFG_DURATION, "2m", 120000}, {CFG_DURATION, "1h", 3600000},
	{CFG_DURATION, "2d", 172800000}, {CFG_SIZE, "4096", 4096}, {CFG_SIZE, "10b", 10},
	{CFG_SIZE, "64K", 65536}, {CFG_SIZE, "64M", 64ULL << 20}, {CFG_SIZE, "2G", 2ULL << 30},
	{CFG_SIZE, "1KiB", 1024}, {CFG_SIZE, "3mb", 3ULL << 20}, {CFG_SIZE, "1T", 1ULL << 40},
};

START_TEST(durations_and_sizes_parse)
{
	const char *name = good_values[_i].type == CFG_SIZE ? "max-body" : "idle-timeout";
	const char *args[2] = {NULL};
	char flag[64];
	struct err e = ERR_INIT;
	struct cfg *c;

	snprintf(flag, sizeof(flag), "--%s=%s", name, good_values[_i].text);
	args[0] = flag;
	ck_assert_msg(load(&c, &e, args) == 0, "%s", e.msg);
	if (good_values[_i].type == CFG_SIZE)
		ck_assert_uint_eq(cfg_size(c, name), good_values[_i].want);
	else
		ck_assert_uint_eq((unsigned long long)cfg_duration_ms(c, name), good_values[_i].want);
	cfg_free(c);
}
END_TEST

START_TEST(file_syntax)
{
	const char *args[] = {"--config", NULL, NULL};
	struct err e = ERR_INIT;
	struct cfg *c;

	args[1] = write_conf("\n  # comment\n\nname = \" spaced \"\nidle_timeout=2s\n"
			     "verbose = yes  \ntoken = a=b#c\n");
	ck_assert_msg(load(&c, &e, args) == 0, "%s", e.msg);
	ck_assert_str_eq(cfg_str(c, "name"), " spaced ");
	ck_assert_int_eq(cfg_duration_ms(c, "idle-timeout"), 2000);
	ck_assert(cfg_bool(c, "verbose"));
	ck_assert_str_eq(cfg_str(c, "token"), "a=b#c");
	cfg_free(c);
}
END_TEST

/* File errors cite file:line. */
static const struct {
	const char *text;
	int line;
	const char *msg;
} bad_files[] = {
	{"name = x\nport = 1\n", 2, "unknown option `port`"},
	{"# c\n\nhealth-port: 1\n", 3, "expected `name = value`"},
	{"= 1\n", 1, "expected `name = value`"},
	{"verbose = true\nhealth-port = ten\n", 2, "health-port: `ten` is not an integer"},
};

START_TEST(file_errors_cite_line)
{
	const char *args[] = {"--config", NULL, NULL};
	struct err e = ERR_INIT;
	char want[256];
	struct cfg *c;

	args[1] = write_conf(bad_files[_i].text);
	ck_assert_int_eq(load(&c, &e, args), -1);
	snprintf(want, sizeof(want), "%s:%d: %s", conf_path, bad_files[_i].line, bad_files[_i].msg);
	ck_assert_str_eq(e.msg, want);
	cfg_free(c);
}
END_TEST

START_TEST(config_from_environment)
{
	struct err e = ERR_INIT;
	struct cfg *c;

	setenv("CKT_CONFIG", write_conf("name = from-file\n"), 1);
	ck_assert_msg(load(&c, &e, NULL) == 0, "%s", e.msg);
	ck_assert_str_eq(cfg_str(c, "name"), "from-file");
	cfg_free(c);
}
END_TEST

/* Each row: arguments, then the value of --verbose they must leave. */
static const struct {
	const char *args[3];
	const char *env;
	bool want;
} bools[] = {
	{{"--verbose"}, NULL, true},         {{"--no-verbose"}, "yes", false},
	{{"--verbose=off"}, NULL, false},    {{"--verbose", "--no-verbose"}, NULL, false},
	{{"--no-verbose", "--verbose"}, NULL, true}, {{NULL}, "ON", true},
	{{"--verbose=1"}, NULL, true},
};

START_TEST(bool_flags_and_negation)
{
	struct err e = ERR_INIT;
	struct cfg *c;

	if (bools[_i].env)
		setenv("CKT_VERBOSE", bools[_i].env, 1);
	ck_assert_msg(load(&c, &e, bools[_i].args) == 0, "%s", e.msg);
	ck_assert_int_eq(cfg_bool(c, "verbose"), bools[_i].want);
	cfg_free(c);
}
END_TEST

START_TEST(remaining_args_are_returned)
{
	const char *args[] = {"a", "--name", "x", "-", "b", "--", "--verbose", "c", NULL};
	struct err e = ERR_INIT;
	char *const *rest;
	struct cfg *c;
	size_t n;

	ck_assert_msg(load(&c, &e, args) == 0, "%s", e.msg);
	rest = cfg_args(c, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(rest[0], "a");
	ck_assert_str_eq(rest[1], "-");
	ck_assert_str_eq(rest[2], "b");
	ck_assert_str_eq(rest[3], "--verbose");
	ck_assert_str_eq(rest[4], "c");
	ck_assert_ptr_null(rest[5]);
	ck_assert_str_eq(cfg_str(c, "name"), "x");
	ck_assert(!cfg_bool(c, "verbose"));
	cfg_free(c);
}
END_TEST

START_TEST(help_is_printed)
{
	const char *args[] = {"--health-port=1", "--help", NULL};
	struct err e = ERR_INIT;
	char out[4096] = "";
	int saved = dup(1), fd = memfd_create("help", 0);
	struct cfg *c;
	ssize_t n;

	/* cfg_load prints to stdout: catch it in a memfd. */
	fflush(stdout);
	dup2(fd, 1);
	ck_assert_int_eq(load(&c, &e, args), 1);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	ck_assert_msg(strstr(out, "Usage: prog [OPTION]"), "%s", out);
	ck_assert_msg(strstr(out, "--health-port=N"), "%s", out);
	ck_assert_msg(strstr(out, "port of the health endpoint"), "%s", out);
	ck_assert_msg(strstr(out, "(default: 8080; env: CKT_HEALTH_PORT)"), "%s", out);
	ck_assert_msg(strstr(out, "--[no-]verbose"), "%s", out);
	ck_assert_msg(strstr(out, "(env: CKT_TOKEN)"), "%s", out);
	ck_assert_msg(strstr(out, "--config=FILE"), "%s", out);
	ck_assert_msg(strstr(out, "env: CKT_CONFIG"), "%s", out);
	cfg_free(c);
}
END_TEST

/* --version is the caller's to answer (it knows the version): cfg_load()
 * says so and prints nothing; --help wins when both are given, and the
 * help lists --version. */
START_TEST(version_is_reported)
{
	static const struct {
		const char *args[4];
		int rc;
	} cases[] = {
		{{"--version"}, 2},
		{{"--name", "x", "--version"}, 2},
		{{"--version", "--help"}, 1},
		{{"--", "--version"}, 0}, /* after "--": an argument */
		{{"--name", "--version"}, 0}, /* a flag's value */
	};
	int saved = dup(1), fd = memfd_create("version", 0);
	char out[4096] = "";

	fflush(stdout);
	dup2(fd, 1);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct err e = ERR_INIT;
		struct cfg *c;
		off_t before = lseek(fd, 0, SEEK_END);
		int rc = load(&c, &e, cases[i].args);

		fflush(stdout);
		ck_assert_msg(rc == cases[i].rc, "case %zu: %d (%s)", i, rc, e.msg);
		if (rc != 1)
			ck_assert_msg(lseek(fd, 0, SEEK_END) == before, "case %zu printed", i);
		cfg_free(c);
	}
	dup2(saved, 1);
	close(saved);
	ck_assert_int_gt(pread(fd, out, sizeof(out) - 1, 0), 0);
	close(fd);
	ck_assert_msg(strstr(out, "--version"), "%s", out);
	ck_assert_msg(strstr(out, "print the version and exit"), "%s", out);
}
END_TEST

START_TEST(no_env_prefix_ignores_environment)
{
	char *argv[] = {"prog", NULL};
	struct err e = ERR_INIT;
	struct cfg *c = cfg_new(opts, ARRAY_LEN(opts), NULL);

	setenv("CKT_HEALTH_PORT", "1", 1);
	ck_assert_int_eq(cfg_load(c, 1, argv, &e), 0);
	ck_assert_int_eq(cfg_int(c, "health-port"), 8080);
	cfg_free(c);
}
END_TEST

START_TEST(unknown_getter_aborts)
{
	char *argv[] = {"prog", NULL};
	struct cfg *c = cfg_new(opts, ARRAY_LEN(opts), NULL);

	cfg_load(c, 1, argv, NULL);
	dup2(open("/dev/null", O_WRONLY | O_CLOEXEC), 2); /* the message is expected */
	cfg_int(c, "name"); /* a string option read as an integer */
}
END_TEST

struct counts {
	char names[4][16];
	long n[4];
	int seen;
};

static int note_count(const char *name, long n, void *ud, struct err *e)
{
	struct counts *c = ud;

	if (strcmp(name, "bad") == 0)
		return err_set(e, 0, "bad is refused by the caller");
	snprintf(c->names[c->seen], sizeof(c->names[0]), "%s", name);
	c->n[c->seen++] = n;
	return 0;
}

START_TEST(each_count_walks_name_n_lists)
{
	static const struct {
		const char *list;
		int rc;
		int seen;
		const char *says;
	} cases[] = {
		{"desktop=2,other=0", 0, 2, NULL},
		{"", 0, 0, NULL},
		{"desktop", -1, 0, "`desktop` is not name=N"},
		{"desktop=", -1, 0, "must be 0..10"},
		{"desktop=11", -1, 0, "must be 0..10"},
		{"desktop=-1", -1, 0, "must be 0..10"},
		{"desktop=2x", -1, 0, "must be 0..10"},
		{"desktop=99999999999999999999", -1, 0, "must be 0..10"},
		{"a=1,bad=1", -1, 1, "refused by the caller"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct counts c = {0};
		struct err e = ERR_INIT;
		int rc = cfg_each_count(cases[i].list, "opt", 0, 10, note_count, &c, &e);

		ck_assert_msg(rc == cases[i].rc, "`%s`: %d", cases[i].list, rc);
		ck_assert_int_eq(c.seen, cases[i].seen);
		if (cases[i].says)
			ck_assert_msg(strstr(e.msg, cases[i].says), "`%s`: %s", cases[i].list, e.msg);
	}
	{
		struct counts c = {0};
		struct err e = ERR_INIT;

		ck_assert_int_eq(cfg_each_count("desktop=2,other=0", "opt", 0, 10, note_count, &c, &e), 0);
		ck_assert_str_eq(c.names[0], "desktop");
		ck_assert_int_eq(c.n[0], 2);
		ck_assert_str_eq(c.names[1], "other");
		ck_assert_int_eq(c.n[1], 0);
		ck_assert_int_eq(cfg_each_count("x", "warm-pool", 0, 10, note_count, &c, &e), -1);
		ck_assert_str_eq(e.msg, "--warm-pool: `x` is not name=N");
	}
}
END_TEST

Suite *suite_cfg(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_apply);
	tcase_add_loop_test(tc, sources_override_in_order, 0, (int)ARRAY_LEN(precedence));
	tcase_add_loop_test(tc, bad_values_are_explained, 0, (int)ARRAY_LEN(bad_values));
	tcase_add_loop_test(tc, durations_and_sizes_parse, 0, (int)ARRAY_LEN(good_values));
	tcase_add_test(tc, file_syntax);
	tcase_add_loop_test(tc, file_errors_cite_line, 0, (int)ARRAY_LEN(bad_files));
	tcase_add_test(tc, config_from_environment);
	tcase_add_loop_test(tc, bool_flags_and_negation, 0, (int)ARRAY_LEN(bools));
	tcase_add_test(tc, remaining_args_are_returned);
	tcase_add_test(tc, help_is_printed);
	tcase_add_test(tc, version_is_reported);
	tcase_add_test(tc, no_env_prefix_ignores_environment);
	tcase_add_test(tc, each_count_walks_name_n_lists);
	suite_add_tcase(s, tc);
	/* Aborting needs a child process to die in. */
	if (!getenv("CK_FORK") || strcmp(getenv("CK_FORK"), "no") != 0) {
		TCase *death = tcase_create("death");
		tcase_add_test_raise_signal(death, unknown_getter_aborts, SIGABRT);
		suite_add_tcase(s, death);
	}
	return s;
}
