/* libFuzzer target: a ListObjectsV2 answer, which comes from whatever
 * server the S3 endpoint names.  na_s3_parse_list must hand the callback
 * only NUL-terminated keys of sane length with non-negative sizes, fill the
 * token within its limit, or refuse with a reason; never read past the
 * answer (the input is copied to an exact-size heap block for ASan). */
#include "node-agent/na_s3.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_key(const char *key, long long size, void *ud)
{
	(void)ud;
	if (size < 0 || strlen(key) > 4096)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf token = BUF_INIT(1024);
	struct err e = ERR_INIT;
	char *xml = malloc(size ? size : 1);
	bool truncated = false;
	int rc;

	if (!xml)
		abort();
	memcpy(xml, data, size);
	rc = na_s3_parse_list(xml, size, check_key, NULL, &truncated, &token, &e);
	if (rc == -1 && !e.msg[0])
		abort(); /* a refusal must say why */
	if (rc != 0 && rc != -1)
		abort(); /* check_key never stops the walk */
	if (token.len > token.max || (token.data && token.data[token.len]))
		abort();
	buf_free(&token);
	free(xml);
	return 0;
}
