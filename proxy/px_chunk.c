/* The chunked-framing walker; see px_chunk.h.  RFC 9112 section 7.1. */
#include "proxy/px_chunk.h"

#include "common/util.h"

enum {
	CK_SIZE,    /* hex digits of a chunk size */
	CK_BWS,     /* spaces or tabs after the size: then `;` or CR only */
	CK_EXT,     /* extensions after the `;`, until CR */
	CK_SIZE_LF, /* the LF of the size line */
	CK_DATA,    /* n data bytes */
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TR_START, /* start of a trailer line or of the final CRLF */
	CK_TR_LINE,
	CK_TR_LF,
	CK_END_LF,
	CK_DONE,
};

void px_chunk_init(struct px_chunk *c)
{
	c->st = CK_SIZE;
	c->n = 0;
	c->digits = 0;
	c->ext = 0;
}

long px_chunk_scan(struct px_chunk *c, const char *buf, size_t len, bool *done)
{
	size_t i = 0;

	*done = false;
	while (i < len) {
		unsigned char ch = (unsigned char)buf[i];

		switch (c->st) {
		case CK_SIZE: {
			int v = util_hexval(ch);

			if (v >= 0) {
				if (++c->digits > 16)
					return -1;
				c->n = c->n * 16 + (uint64_t)v;
			} else if (c->digits && ch == ';') {
				c->st = CK_EXT;
				c->ext = 0;
			} else if (c->digits && (ch == ' ' || ch == '\t')) {
				c->st = CK_BWS;
			} else if (c->digits && ch == '\r') {
				c->st = CK_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		}
		case CK_BWS:
			if (ch == ';')
				c->st = CK_EXT;
			else if (ch == '\r')
				c->st = CK_SIZE_LF;
			else if (ch != ' ' && ch != '\t')
				return -1;
			i++;
			break;
		case CK_EXT:
			if (ch == '\r')
				c->st = CK_SIZE_LF;
			else if ((ch < 0x20 && ch != '\t') || ch == 0x7f || ++c->ext > PX_CHUNK_EXT_MAX)
				return -1;
			i++;
			break;
		case CK_SIZE_LF:
			if (ch != '\n')
				return -1;
			c->st = c->n ? CK_DATA : CK_TR_START;
			c->ext = 0;
			i++;
			break;
		case CK_DATA: {
			size_t k = len - i;

			if ((uint64_t)k > c->n)
				k = (size_t)c->n;
			c->n -= k;
			i += k;
			if (c->n == 0)
				c->st = CK_DATA_CR;
			break;
		}
		case CK_DATA_CR:
			if (ch != '\r')
				return -1;
			c->st = CK_DATA_LF;
			i++;
			break;
		case CK_DATA_LF:
			if (ch != '\n')
				return -1;
			c->st = CK_SIZE;
			c->n = 0;
			c->digits = 0;
			i++;
			break;
		case CK_TR_START:
			c->st = ch == '\r' ? CK_END_LF : CK_TR_LINE;
			/* a trailer field starts with a name, never a space (no obs-fold) */
			if (c->st == CK_TR_LINE && (ch <= 0x20 || ch == 0x7f ||
						    ++c->ext > PX_CHUNK_TRAILER_MAX))
				return -1;
			i++;
			break;
		case CK_TR_LINE:
			if (ch == '\r')
				c->st = CK_TR_LF;
			else if ((ch < 0x20 && ch != '\t') || ch == 0x7f || ++c->ext > PX_CHUNK_TRAILER_MAX)
				return -1;
			i++;
			break;
		case CK_TR_LF:
			if (ch != '\n')
				return -1;
			c->st = CK_TR_START;
			i++;
			break;
		case CK_END_LF:
			if (ch != '\n')
				return -1;
			c->st = CK_DONE;
			*done = true;
			return (long)(i + 1);
		default:
			return -1;
		}
	}
	return (long)i;
}
