/* Cutting an unfinished fragmented MP4 to its whole part; see mp4.h. */
#include "mp4.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t mp4_whole_end(uint64_t size, size_t (*read_at)(void *ctx, uint64_t off, void *buf, size_t n),
		       void *ctx)
{
	uint64_t off = 0, whole = 0;
	bool moov = false, moof_last = false;

	while (off + 8 <= size) {
		unsigned char h[16];
		uint64_t len;
		size_t head = 8;

		if (read_at(ctx, off, h, 8) != 8)
			break;
		len = be32(h);
		if (len == 1) { /* a 64-bit size follows the type */
			if (off + 16 > size || read_at(ctx, off + 8, h + 8, 8) != 8)
				break;
			len = (uint64_t)be32(h + 8) << 32 | be32(h + 12);
			head = 16;
		} else if (len == 0) {
			break; /* "to the end of the file": a size never filled in */
		}
		if (len < head)
			return 0; /* not boxes */
		if (len > size - off)
			break; /* the box the writer did not finish */
		moof_last = memcmp(h + 4, "moof", 4) == 0;
		if (memcmp(h + 4, "moov", 4) == 0) {
			moov = true;
			whole = off + len;
		} else if (moov && memcmp(h + 4, "mdat", 4) == 0) {
			whole = off + len;
		}
		off += len;
	}
	if (off == size && !moof_last)
		return moov ? size : 0; /* every box whole (an `mfra` at the end too) */
	return moov ? whole : 0;
}

static size_t pread_at(void *ctx, uint64_t off, void *buf, size_t n)
{
	ssize_t got = pread(*(int *)ctx, buf, n, (off_t)off);

	return got < 0 ? 0 : (size_t)got;
}

int mp4_trim(const char *path, uint64_t *cut, struct err *e)
{
	AUTOCLOSE int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	uint64_t end;

	*cut = 0;
	if (fd == -1 || fstat(fd, &st) == -1)
		return err_set(e, errno, "open `%s`", path);
	end = mp4_whole_end((uint64_t)st.st_size, pread_at, &fd);
	if (end == 0 || end >= (uint64_t)st.st_size)
		return 0;
	if (ftruncate(fd, (off_t)end) == -1)
		return err_set(e, errno, "cut `%s`", path);
	*cut = (uint64_t)st.st_size - end;
	return 0;
}
