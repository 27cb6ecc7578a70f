/* Recording ids ("rec-" then 1 to 40 of [a-z0-9-]): the node makes them,
 * and the portal, the node and the sandbox's recorder each refuse any other
 * before it names a file or a URL (docs/recording.md). */
#ifndef CLOCHE_RECID_H
#define CLOCHE_RECID_H

#include <stdbool.h>
#include <stddef.h>

/* True when the n bytes at id are a recording id. */
bool recid_valid(const char *id, size_t n);

#endif
