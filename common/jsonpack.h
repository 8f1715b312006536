/* jsonpack: a JSON document (jansson) re-encoded as MessagePack with libmsgpack-c, for the
 * AIStore clients that ask for it (Accept: application/msgpack; their list-objects results
 * decode msgpack only into the field names AIStore's msgp encoder writes). Objects become
 * maps (keys in the document's order), arrays arrays, strings str, integers int, reals
 * float64, true/false bool, null nil. */
#ifndef HD_JSONPACK_H
#define HD_JSONPACK_H

#include <stddef.h>

#include <jansson.h>

/* 0 with *out (malloc'd, *len bytes), or -ENOMEM / -EINVAL (nesting deeper than 64). */
int hd_jsonpack(const json_t *j, char **out, size_t *len);

/* Whether the client asked for msgpack: an Accept header naming application/msgpack. */
int hd_jsonpack_wanted(const char *accept);

#endif
