#include "common/hrw.h"

#include <string.h>

#include <xxhash.h>

#include "common/buf.h"

uint64_t hd_hrw_digest(const void *s, size_t n)
{
    return XXH64(s, n, HD_HRW_SEED);
}

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* Exactly AIStore's cmn/xoshiro256.Hash: a splitmix64 round, then a second pair of its
 * multiply steps and a xoshiro-style scramble. Any change breaks placement compatibility. */
uint64_t hd_hrw_weight(uint64_t node_digest, uint64_t obj_digest)
{
    uint64_t z = (node_digest ^ obj_digest) + 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z = (z ^ (z >> 31)) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z = (z ^ (z >> 31)) * 5;
    return rotl64(z, 7) * 9;
}

int hd_hrw_pick(const uint64_t *node_digests, const unsigned char *skip, size_t n,
                uint64_t obj_digest)
{
    uint64_t best = 0;
    int win = -1;

    for (size_t i = 0; i < n && i <= (size_t)INT32_MAX; i++) {
        uint64_t w;
        if (skip && skip[i])
            continue;
        w = hd_hrw_weight(node_digests[i], obj_digest);
        if (win < 0 || w > best) {
            best = w;
            win = (int)i;
        }
    }
    return win;
}

int hd_hrw_uname(struct hd_buf *out, const char *provider, const char *ns, const char *bucket,
                 const char *object)
{
    return hd_buf_printf(out, "%s/%s/%s/%s", provider, ns ? ns : "@#", bucket, object);
}

const char *hd_hrw_provider(const char *provider)
{
    return provider && (strcmp(provider, "aws") == 0 || strcmp(provider, "s3") == 0) ? "aws"
                                                                                     : "ais";
}
