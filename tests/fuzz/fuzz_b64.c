/* libFuzzer target: common/b64's strict decoder on any bytes, under every
 * flag combination (the input's first byte picks them).  The buffer that
 * b64_decoded_max() sizes is always enough and is never overrun; what
 * decodes encodes back to text that decodes to the same bytes; and one
 * byte less room is refused, not overrun. */
#include "common/b64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned flags, eflags;
	const char *in = (const char *)data + 1;
	size_t len, cap, tlen;
	unsigned char *out, *again;
	char *text;
	ssize_t n;

	if (size < 1)
		return 0;
	flags = data[0] & (B64_URL | B64_NOPAD | B64_PAD_OPTIONAL | B64_SPACE);
	eflags = flags & (B64_URL | B64_NOPAD);
	len = size - 1;
	cap = b64_decoded_max(len);
	out = malloc(cap ? cap : 1);
	if (!out)
		return 0;
	n = b64_decode(in, len, flags, out, cap);
	if (n == B64_ERANGE || (n >= 0 && (size_t)n > cap) || !b64_strerror(n))
		abort();
	if (n > 0) {
		text = b64_encode_alloc(out, (size_t)n, eflags, &tlen);
		again = malloc((size_t)n);
		if (!text || !again || tlen != b64_encoded_len((size_t)n, eflags) ||
		    b64_decode(text, tlen, eflags, again, (size_t)n) != n ||
		    memcmp(again, out, (size_t)n) != 0)
			abort();
		/* exactly one byte short: refused, and ASan sees any overrun */
		if (b64_decode(in, len, flags, again, (size_t)n - 1) != B64_ERANGE)
			abort();
		free(text);
		free(again);
	}
	free(out);
	return 0;
}
