/* hrw: AIStore-compatible rendezvous (highest random weight) hashing for object placement
 * across targets and mountpaths. Pure functions: any thread. */
#ifndef HD_HRW_H
#define HD_HRW_H

#include <stddef.h>
#include <stdint.h>

struct hd_buf;

/* AIStore's seed for every placement digest. */
#define HD_HRW_SEED 1103515245ull

/* XXH64(s, HD_HRW_SEED): the digest of a uname, node id or mountpath. */
uint64_t hd_hrw_digest(const void *s, size_t n);
/* Weight of an object on a node: AIStore's mix of node_digest ^ obj_digest. */
uint64_t hd_hrw_weight(uint64_t node_digest, uint64_t obj_digest);
/* Index of the node with the highest weight, skipping i where skip && skip[i]; -1 if no
 * node is eligible. Ties (practically impossible) go to the lowest index. */
int hd_hrw_pick(const uint64_t *node_digests, const unsigned char *skip, size_t n,
                uint64_t obj_digest);
/* The provider part of a uname for a bucket's provider: "aws" for S3-backed buckets ("aws"
 * or "s3"), "ais" for everything else (native buckets, NULL, ""). */
const char *hd_hrw_provider(const char *provider);
/* Appends "provider/ns/bucket/object" to out; ns NULL means the global namespace "@#".
 * -ENOMEM on allocation failure (out keeps its sticky oom flag). */
int hd_hrw_uname(struct hd_buf *out, const char *provider, const char *ns, const char *bucket,
                 const char *object);

#endif
