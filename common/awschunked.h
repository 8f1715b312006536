/* awschunked: streaming decoder for "Content-Encoding: aws-chunked" request bodies (after
 * HTTP de-chunking), with SigV4 chunk and trailer signature checks. One decoder per request;
 * used by one thread at a time.
 *
 * Accepted grammar (input may be split at any byte across feed calls):
 *   chunk   = hex-size [ ";" ext *( ";" ext ) ] CRLF data CRLF      (hex-size > 0)
 *   last    = "0" [ ";" ext ... ] CRLF
 *   trailer = *( name ":" value CRLF ) [ "x-amz-trailer-signature:" 64hex CRLF ] CRLF
 * with ext "chunk-signature=" 64hex. A size line is at most 128 bytes before its CRLF,
 * a chunk at most 64 MiB, the trailer section at most 4 KiB in total.
 *
 * Modes: STREAMING_SIGNED and STREAMING_SIGNED_TRAILER need the verified request's auth
 * and require a valid chunk-signature on every chunk (seeded by auth->signature);
 * STREAMING_SIGNED takes no trailer lines; STREAMING_SIGNED_TRAILER requires
 * x-amz-trailer-signature after the trailers. Every other mode checks no signatures,
 * ignores chunk extensions and x-amz-trailer-signature.
 *
 * Tolerated at the very end of the body only (SDKs differ): the blank line closing the
 * trailer section may be missing, and so may the CRLF of the last trailer line.
 *
 * Payload bytes reach the sink as they arrive, before their chunk's signature has been
 * checked (a chunk can be 64 MiB): on any error the caller must discard what the sink
 * wrote. */
#ifndef HD_AWSCHUNKED_H
#define HD_AWSCHUNKED_H

#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"

#define HD_AWSCHUNKED_MAX_LINE 128
#define HD_AWSCHUNKED_MAX_CHUNK (64u << 20)
#define HD_AWSCHUNKED_MAX_TRAILER 4096

struct hd_awschunked;

/* Receives decoded payload bytes; returns 0 or a negative code that aborts decoding. */
typedef int (*hd_awschunked_sink_fn)(void *arg, const char *p, size_t n);

/* auth is copied (may be NULL for unsigned modes). NULL on allocation failure or when a
 * signed mode comes without auth. */
struct hd_awschunked *hd_awschunked_new(enum hd_payload mode, const struct hd_sigv4_auth *auth);
/* Decodes n more bytes. 0, HD_ECHUNK (malformed framing or limits), HD_EBADSIG (chunk or
 * trailer signature), the sink's error, or -ENOMEM. Errors are sticky. */
int hd_awschunked_feed(struct hd_awschunked *d, const char *in, size_t n,
                       hd_awschunked_sink_fn sink, void *arg);
/* End of body: 0 if the final chunk and trailer section were complete (see the tolerance
 * above), HD_EINCOMPLETEBODY if not, or the sticky error. */
int hd_awschunked_finish(struct hd_awschunked *d);
/* Payload bytes handed to the sink so far. */
uint64_t hd_awschunked_decoded(const struct hd_awschunked *d);
/* Value of a trailer (lowercase name), NULL if absent. Valid until _free; meaningful once
 * _finish returned 0. x-amz-trailer-signature is not listed. */
const char *hd_awschunked_trailer(const struct hd_awschunked *d, const char *lname);
void hd_awschunked_free(struct hd_awschunked *d);

#endif
