/* usermeta: an object's user metadata, the x-amz-meta-* of S3 and AIStore's custom metadata:
 * one JSON object {lowercase name: value} kept with the object (hd_obj_meta.meta). Merges a
 * client's edit (AIStore's ObjectWriter.set_custom_props) into it under the limits a PUT's
 * headers have. Pure; any thread. */
#ifndef HD_USERMETA_H
#define HD_USERMETA_H

#include <jansson.h>

/* Bytes of names and values together, as S3 counts x-amz-meta-* (2 KiB). */
#define HD_USERMETA_MAX 2048
/* Bytes of one name (an HTTP header name once prefixed with x-amz-meta-). */
#define HD_USERMETA_NAME_MAX 255

/* json (NULL: none) with the entries of set merged in (a name given again takes the new
 * value), or replaced by them (replace), into *out (malloc'd, compact; NULL when none is
 * left). Names are lowercased, as HTTP headers carry them. 0, or: HD_EBADARG (set is not an
 * object of strings; a name not of 1..HD_USERMETA_NAME_MAX HTTP token characters; a value
 * with a control character, which no header could carry), HD_EMETATOOLARGE (over
 * HD_USERMETA_MAX), -ENOMEM. A json that does not parse counts as none. */
int hd_usermeta_merge(const char *json, const json_t *set, int replace, char **out);

#endif
