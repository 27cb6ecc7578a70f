/* Test hooks (see na_test.h): a table of pauses, filled once at start from
 * --test-hooks and read-only afterwards, so the threads that pause need no
 * lock. */
#include "node-agent/na_test.h"

#include "common/cfg.h"
#include "common/log.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define NA_HOOK_MAX_MS 60000

static const char *const hook_names[NA_HOOK_COUNT] = {
	[NA_HOOK_DESTROY] = "destroy",
	[NA_HOOK_TEARDOWN] = "teardown",
	[NA_HOOK_EGRESS_APPLY] = "egress-apply",
	[NA_HOOK_RESOLVE] = "egress-resolve",
	[NA_HOOK_CONNECT] = "connect-serve",
	[NA_HOOK_EXIT] = "exit",
	[NA_HOOK_CHECKPOINT] = "checkpoint",
	[NA_HOOK_CHECKPOINT_DONE] = "checkpoint-done",
	[NA_HOOK_RESTORE] = "restore",
	[NA_HOOK_UPLOAD] = "upload",
};

static int hook_ms[NA_HOOK_COUNT];

static int set_hook(const char *point, long ms, void *ud, struct err *e)
{
	(void)ud;
	for (int h = 0; h < NA_HOOK_COUNT; h++)
		if (strcmp(point, hook_names[h]) == 0) {
			hook_ms[h] = (int)ms;
			return 0;
		}
	return err_set(e, 0, "--test-hooks: unknown point `%s`", point);
}

int na_test_hooks_set(const char *spec, struct err *e)
{
	return cfg_each_count(spec, "test-hooks", 0, NA_HOOK_MAX_MS, set_hook, NULL, e);
}

bool na_test_hooks_on(void)
{
	for (int h = 0; h < NA_HOOK_COUNT; h++)
		if (hook_ms[h] > 0)
			return true;
	return false;
}

void na_test_pause(enum na_hook h)
{
	struct timespec ts;

	if (h < 0 || h >= NA_HOOK_COUNT || hook_ms[h] <= 0)
		return;
	/* The tests wait for this line to know the window is open. */
	log_info("test hook", "{s:s, s:i}", "point", hook_names[h], "ms", hook_ms[h]);
	ts.tv_sec = hook_ms[h] / 1000;
	ts.tv_nsec = (long)(hook_ms[h] % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		; /* sleep the rest */
}
