/* Capped capture of program output, and text safe to put in JSON.
 *
 * A command may print gigabytes; a model can read a few kilobytes.  A cap
 * keeps the first `limit` bytes, counts the rest, and renders the kept
 * text with a marker a model understands:
 *	"...kept text\n[... truncated: 1234567 more bytes ...]"
 * Output is arbitrary bytes, but JSON strings are UTF-8, so text is
 * sanitized: invalid UTF-8 sequences become U+FFFD. */
#ifndef CLOCHE_MCP_CAP_H
#define CLOCHE_MCP_CAP_H

#include <stddef.h>

struct mcp_cap {
	char *data;
	size_t len, limit;
	unsigned long long dropped; /* bytes seen beyond limit */
};

/* An empty cap keeping at most limit bytes (allocated on first use). */
void mcp_cap_init(struct mcp_cap *c, size_t limit);

/* Adds n bytes: keeps what fits under the limit, counts the rest.
 * Returns 0, or -1 when out of memory (the bytes are then counted as dropped). */
int mcp_cap_add(struct mcp_cap *c, const void *p, size_t n);

/* Renders the kept bytes as valid UTF-8 plus, when anything was dropped,
 * the truncation marker.  Returns a NUL-terminated string the caller frees
 * (*len receives its length when len is not NULL), or NULL when out of memory. */
char *mcp_cap_text(const struct mcp_cap *c, size_t *len);

void mcp_cap_free(struct mcp_cap *c);

/* Returns a copy of n bytes at p with invalid UTF-8 replaced by U+FFFD and
 * NUL bytes kept; caller frees.  *out_len receives its length.  NULL when
 * out of memory. */
char *mcp_utf8_clean(const char *p, size_t n, size_t *out_len);

/* True when n bytes at p look like binary data (NUL bytes, or many bytes
 * that are not valid UTF-8 text). */
int mcp_looks_binary(const char *p, size_t n);

#endif
