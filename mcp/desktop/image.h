/* RGB images for mcp-desktop: resampling and PNG encoding (libpng).
 *
 * Images are 8-bit RGB, rows packed (w * 3 bytes).  Screenshots are
 * re-encoded on every call, so encoding favours speed: zlib at a low level
 * with one cheap row filter (sub).  Level 1 made a 1280x800 start-page
 * screenshot of 493 KB in about 31 ms on the host; level 3 340 KB in 50 ms,
 * level 6 302 KB in 128 ms (--png-level chooses). */
#ifndef CLOCHE_DESK_IMAGE_H
#define CLOCHE_DESK_IMAGE_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

struct desk_image {
	int w, h;
	unsigned char *px; /* w * h * 3 bytes, owned by the image */
};

/* The pointer's picture as X draws it over the screen: w x h pixels of
 * premultiplied ARGB (0xAARRGGBB), its top-left corner at (x, y) on the
 * screen (the hot spot already subtracted). */
struct desk_cursor {
	int x, y, w, h;
	uint32_t *argb; /* owned; free with desk_cursor_free */
};

void desk_cursor_free(struct desk_cursor *c);

/* Draws c over img, which shows the screen from (ox, oy) on: each pixel
 * blended by its alpha, clipped to the image. */
void desk_image_draw_cursor(struct desk_image *img, int ox, int oy, const struct desk_cursor *c);

/* Allocates an uninitialised w x h image into img.  0 or -1 with e set. */
int desk_image_alloc(struct desk_image *img, int w, int h, struct err *e);

/* Frees img's pixels (img itself may be on the stack); safe to repeat. */
void desk_image_free(struct desk_image *img);

/* Resamples src to w x h into dst (allocated here): each output pixel is
 * the mean of the source pixels it covers when shrinking, the nearest
 * source pixel when enlarging.  0 or -1 with e set. */
int desk_image_scale(const struct desk_image *src, int w, int h, struct desk_image *dst,
		     struct err *e);

/* A 64-bit hash of img's size and pixels, to tell whether the screen
 * changed without encoding it (about 1 ms for 1280x800).  Not
 * cryptographic: equal images hash equal, and a change of any pixel
 * changes the hash but for chance (about 2^-64). */
uint64_t desk_image_hash(const struct desk_image *img);

/* Encodes img as a PNG with zlib level `level` (0-9) into a malloc'ed
 * buffer *out of *len bytes (the caller frees it).  0 or -1 with e set. */
int desk_image_png(const struct desk_image *img, int level, unsigned char **out, size_t *len,
		   struct err *e);

#endif
