/* brace: brace templates naming many objects, as prefetch and evict jobs take them:
 * "shard-{0000..0999}.tar", "img-{0..98..2}.jpg", "{train,val}/part-{00..15}". A group is a
 * numeric range {A..B} or {A..B..STEP} (zero-padded to the wider bound when either bound has
 * a leading zero; descending when A > B) or a comma list {x,y,z}. Groups multiply, the
 * leftmost varying slowest. Job arguments arrive over the network: fuzzed by
 * test/fuzz/fuzz_brace.c. Pure; any thread. */
#ifndef HD_BRACE_H
#define HD_BRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define HD_BRACE_MAX_LEN 1024
#define HD_BRACE_MAX_GROUPS 8
#define HD_BRACE_MAX_NAMES 100000000ull /* expansions per template */

struct hd_brace;

/* HD_EBADARG (with a reason in err) for an unbalanced or empty brace, a range that is not
 * two or three decimal numbers, a zero step, too many groups or names; -ENOMEM. */
int hd_brace_parse(const char *s, struct hd_brace **out, char *err, size_t errlen);
void hd_brace_free(struct hd_brace *t);
uint64_t hd_brace_count(const struct hd_brace *t);
/* Appends the i-th name (0 <= i < count) to out. 0, HD_EBADARG for i out of range, -ENOMEM. */
int hd_brace_at(const struct hd_brace *t, uint64_t i, struct hd_buf *out);

#endif
