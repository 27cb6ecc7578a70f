/* libFuzzer target: a template import's `btrfs send` stream, which comes
 * from outside the node (later from S3).  na_btrfs_stream_check must either
 * name exactly one subvolume or refuse with a reason, and never read past
 * what the stream holds. */
#include "node-agent/na_btrfs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[256];
	struct err e = ERR_INIT;
	int fd = memfd_create("stream", MFD_CLOEXEC);
	int rc;

	if (fd == -1)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	memset(name, 0, sizeof(name));
	rc = na_btrfs_stream_check(fd, name, sizeof(name), &e);
	if (rc == 0 && (!name[0] || strchr(name, '/') || strlen(name) >= sizeof(name)))
		abort(); /* a name the import would put in templates/ as is */
	if (rc == -1 && !e.msg[0])
		abort(); /* a refusal must say why */
	if (lseek(fd, 0, SEEK_CUR) != (off_t)size)
		abort(); /* the check must leave the offset where it was */
	close(fd);
	return 0;
}
