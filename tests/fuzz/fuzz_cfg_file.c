/* libFuzzer target: the `name = value` configuration file of every daemon
 * (common/cfg), with values of every option type.  The input becomes the
 * file through a memfd. */
#include "common/cfg.h"
#include "common/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cfg_opt opts[] = {
	{"port", CFG_INT, "8080", "a port"},
	{"name", CFG_STR, "x", "a name"},
	{"verbose", CFG_BOOL, "false", "a flag"},
	{"idle-timeout", CFG_DURATION, "5m", "a duration"},
	{"max-body", CFG_SIZE, "1M", "a size"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = ERR_INIT;
	char path[64];
	char *argv[] = {"fuzz", "--config", path, NULL};
	int fd = memfd_create("cfg", MFD_CLOEXEC);
	struct cfg *c;

	if (fd < 0)
		return 0;
	if (util_write_all(fd, data, size) == 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		c = cfg_new(opts, sizeof(opts) / sizeof(opts[0]), NULL);
		if (c && cfg_load(c, 3, argv, &e) == -1 && !e.msg[0])
			abort(); /* a refusal must say why */
		cfg_free(c);
	}
	close(fd);
	return 0;
}
