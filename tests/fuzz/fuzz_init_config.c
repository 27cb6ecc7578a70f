/* libFuzzer target: cloche-init's service-table parser.  Any input must be
 * accepted or refused with a message, never crash, leak or read out of
 * bounds (built with ASan+UBSan).  Expansion reads the environment, so a
 * fixed variable is set for ${...} references to hit. */
#include "appliance/init/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct init_config c;
	struct err e = ERR_INIT;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	setenv("FUZZ_W", "1280", 0);
	if (init_config_parse(text, &c, &e) == 0)
		init_config_free(&c);
	else if (!e.msg[0])
		abort(); /* a refusal must say why */
	free(text);
	return 0;
}
