/* Resampling and PNG encoding; see image.h.
 *
 * libpng reports errors by longjmp() out of its calls.  Everything the
 * error path frees is allocated before setjmp() or reached through a
 * struct that does not live in a register, so nothing is clobbered. */
#include "image.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int desk_image_alloc(struct desk_image *img, int w, int h, struct err *e)
{
	img->w = img->h = 0;
	img->px = NULL;
	if (w <= 0 || h <= 0 || w > 16384 || h > 16384)
		return err_set(e, 0, "image size %dx%d", w, h);
	img->px = malloc((size_t)w * (size_t)h * 3);
	if (!img->px)
		return err_set(e, ENOMEM, "image %dx%d", w, h);
	img->w = w;
	img->h = h;
	return 0;
}

void desk_image_free(struct desk_image *img)
{
	free(img->px);
	img->px = NULL;
	img->w = img->h = 0;
}

void desk_cursor_free(struct desk_cursor *c)
{
	free(c->argb);
	c->argb = NULL;
	c->w = c->h = 0;
}

void desk_image_draw_cursor(struct desk_image *img, int ox, int oy, const struct desk_cursor *c)
{
	for (int j = 0; j < c->h; j++) {
		int y = c->y + j - oy;

		if (y < 0 || y >= img->h)
			continue;
		for (int i = 0; i < c->w; i++) {
			int x = c->x + i - ox;
			uint32_t p = c->argb[(size_t)j * (size_t)c->w + (size_t)i];
			unsigned a = p >> 24;
			unsigned char *d;

			if (x < 0 || x >= img->w || a == 0)
				continue;
			d = img->px + ((size_t)y * (size_t)img->w + (size_t)x) * 3;
			/* Premultiplied: colour + what shows through. */
			for (int k = 0; k < 3; k++) {
				unsigned src = (p >> (16 - 8 * k)) & 0xff;
				unsigned v = src + (d[k] * (255 - a) + 127) / 255;

				d[k] = (unsigned char)(v > 255 ? 255 : v);
			}
		}
	}
}

/* Eight bytes at a time: rotate, mix in, multiply by an odd constant, so
 * every input bit reaches every output bit; the end is a splitmix64-style
 * finaliser.  Written here (a dozen lines) rather than taken from a
 * library: it only has to notice change, not resist an adversary. */
#define HASH_MUL 0x9e3779b97f4a7c15ULL

static uint64_t rotl(uint64_t v, int n)
{
	return v << n | v >> (64 - n);
}

uint64_t desk_image_hash(const struct desk_image *img)
{
	size_t n = (size_t)img->w * (size_t)img->h * 3, i = 0;
	uint64_t h = ((uint64_t)(uint32_t)img->w << 32 | (uint32_t)img->h) * HASH_MUL;
	uint64_t tail = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t v;

		memcpy(&v, img->px + i, 8);
		h = (rotl(h, 27) ^ v) * HASH_MUL;
	}
	for (; i < n; i++)
		tail = tail << 8 | img->px[i];
	h = (rotl(h, 27) ^ tail ^ n) * HASH_MUL;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ h >> 31;
}

/* Source span [*lo, *hi) of output index i of n over a source of m. */
static void span(int i, int n, int m, int *lo, int *hi)
{
	*lo = (int)((int64_t)i * m / n);
	*hi = (int)((int64_t)(i + 1) * m / n);
	if (*hi <= *lo)
		*hi = *lo + 1;
	if (*hi > m)
		*hi = m;
}

int desk_image_scale(const struct desk_image *src, int w, int h, struct desk_image *dst,
		     struct err *e)
{
	int *xs;

	if (desk_image_alloc(dst, w, h, e) == -1)
		return -1;
	xs = malloc(sizeof(*xs) * 2 * (size_t)w);
	if (!xs) {
		desk_image_free(dst);
		return err_set(e, ENOMEM, "scale");
	}
	for (int x = 0; x < w; x++)
		span(x, w, src->w, &xs[2 * x], &xs[2 * x + 1]);
	for (int y = 0; y < h; y++) {
		int y0, y1;
		unsigned char *out = dst->px + (size_t)y * (size_t)w * 3;

		span(y, h, src->h, &y0, &y1);
		for (int x = 0; x < w; x++) {
			uint32_t sum[3] = {0, 0, 0}, n = 0;

			for (int sy = y0; sy < y1; sy++) {
				const unsigned char *p =
					src->px + ((size_t)sy * (size_t)src->w + (size_t)xs[2 * x]) * 3;

				for (int sx = xs[2 * x]; sx < xs[2 * x + 1]; sx++, p += 3) {
					sum[0] += p[0];
					sum[1] += p[1];
					sum[2] += p[2];
					n++;
				}
			}
			for (int c = 0; c < 3; c++)
				out[x * 3 + c] = (unsigned char)((sum[c] + n / 2) / n);
		}
	}
	free(xs);
	return 0;
}

struct png_out {
	unsigned char *data;
	size_t len, cap;
	int oom;
};

static void png_write(png_structp png, png_bytep p, png_size_t n)
{
	struct png_out *o = png_get_io_ptr(png);

	if (o->oom)
		return;
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 65536;
		unsigned char *d;

		while (cap < o->len + n)
			cap *= 2;
		d = realloc(o->data, cap);
		if (!d) {
			o->oom = 1;
			return;
		}
		o->data = d;
		o->cap = cap;
	}
	memcpy(o->data + o->len, p, n);
	o->len += n;
}

static void png_flush_noop(png_structp png)
{
	(void)png;
}

int desk_image_png(const struct desk_image *img, int level, unsigned char **out, size_t *len,
		   struct err *e)
{
	struct png_out o = {0};
	png_structp png = NULL;
	png_infop info = NULL;
	png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)img->h);

	if (!rows)
		return err_set(e, ENOMEM, "png rows");
	for (int y = 0; y < img->h; y++)
		rows[y] = img->px + (size_t)y * (size_t)img->w * 3;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	if (png)
		info = png_create_info_struct(png);
	if (!png || !info) {
		png_destroy_write_struct(&png, NULL);
		free(rows);
		return err_set(e, ENOMEM, "png");
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(rows);
		free(o.data);
		return err_set(e, 0, "png encoding failed");
	}
	png_set_write_fn(png, &o, png_write, png_flush_noop);
	png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, level < 0 ? 0 : level > 9 ? 9 : level);
	/* One filter, not libpng's adaptive choice among five.  On the start
	 * page (a diagonal gradient under UI) at level 1: sub 493 KB in 31 ms,
	 * paeth 614 KB, up 711 KB, adaptive 613 KB in 62 ms. */
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
	png_set_rows(png, info, rows);
	png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
	png_destroy_write_struct(&png, &info);
	free(rows);
	if (o.oom) {
		free(o.data);
		return err_set(e, ENOMEM, "png output");
	}
	*out = o.data;
	*len = o.len;
	return 0;
}
