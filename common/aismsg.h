/* aismsg: pieces of AIStore's action messages that hoard maps onto its own jobs
 * (docs/aistore-compat.md): a bucket as the AIStore SDK names it in a query (?bck_to=
 * "PROVIDER/@UUID#NAMESPACE/BUCKET/"), and a multi-object selection ({"objnames": [..]} or
 * {"template": T}) turned into the args of a hoard prefetch/evict job, and the parts list of a
 * native multipart upload's mpt-complete. All arrive over the network: fuzzed by
 * test/fuzz/fuzz_aismsg.c. Pure; any thread. */
#ifndef HD_AISMSG_H
#define HD_AISMSG_H

#include <stddef.h>

#include <jansson.h>

#define HD_AIS_NAMES_MAX 100000 /* objnames in one selection */

/* Parses "PROVIDER/@UUID#NS/NAME/" (the trailing '/' optional; "PROVIDER/NAME" too).
 * provider: "ais", "aws" ("s3" is taken as "aws"); the namespace must be the global one
 * ("@#" or none: hoard has no namespaces); NAME must pass hd_bucket_name_check. 0 with
 * provider (at least 4 bytes) and name (at least 64 bytes) filled, or HD_EBADARG with a
 * reason in msg. */
int hd_ais_bck_parse(const char *s, char *provider, size_t plen, char *name, size_t nlen, char *msg,
                     size_t msglen);

/* The args of a hoard prefetch/evict job for an AIStore selection value:
 * {"objnames": [N..]} -> {"names": [..]}; {"template": T} with a brace group ->
 * {"template": T}, without one (AIStore's prefix form) -> {"prefix": T}; "latest-ver": true ->
 * "revalidate": true (prefetch). Other AIStore fields (coer, blob-threshold, num-workers) are
 * accepted and ignored. *out is a new object; HD_EBADARG with a reason in msg when value is
 * not an object, has both or neither selection, a name is not a valid object name, or there
 * are more than HD_AIS_NAMES_MAX names; -ENOMEM. whole_ok: no selection at all means the
 * whole bucket ({"prefix": ""}), as does an empty template. */
int hd_ais_selection_args(const json_t *value, int whole_ok, json_t **out, char *msg,
                          size_t msglen);

/* The action message of AIStore's mpt-complete (obj/multipart_upload.py complete()):
 * {"action": "mpt-complete", "value": [{"part-number": N, "etag": E}, ..]} into out, the parts
 * sorted by number. An empty (or absent) etag matches whatever the part's ETag is
 * (any_etag; the SDK sends ""), a given one must match it. HD_EBADARG with a reason in msg
 * for another action, no parts or more than 10000, a part number outside 1..10000 or
 * repeated, a field of the wrong type; -ENOMEM. Release with hd_xml_complete_cleanup. */
struct hd_complete_req;
int hd_ais_mpt_complete_parse(const json_t *msg_json, struct hd_complete_req *out, char *msg,
                              size_t msglen);

/* The archive format (HD_ARCH_*, common/tarindex.h) an AIStore "mime" names (or, when mime
 * is NULL or "", the extension of name: NULL for none): HD_ARCH_TAR for ".tar", "tar",
 * "application/x-tar" and no mime or extension at all; HD_ARCH_TGZ for ".tgz", ".tar.gz";
 * HD_ARCH_TLZ4 ".tar.lz4", HD_ARCH_TZST ".tar.zst", HD_ARCH_ZIP ".zip" (with or without the
 * dot); -1 for any other mime. */
int hd_ais_archive_format(const char *mime, const char *name);

#endif
