/* shardplan: the plan of a shard job, independent of where the objects live. Groups objects
 * into samples by key (WebDataset: the name up to the first dot of its last path component,
 * so a/0001.jpg, a/0001.cls and a/0001.json are one sample), orders the samples (by key, or a
 * seeded shuffle), packs them into shards of a target size without ever splitting a sample,
 * names the shards from a template (train-{000000..}.tar) and gives each shard a digest of
 * its planned content. Also the name templates themselves. Pure functions: any thread.
 *
 * Shuffle: Fisher-Yates over the samples in key order, for i from n-1 down to 1 swapping i
 * with j = next() % (i + 1), where next() is splitmix64 seeded with the seed. The same seed
 * and the same listing give the same shards, on any machine. */
#ifndef HD_SHARDPLAN_H
#define HD_SHARDPLAN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct hd_buf;

enum hd_keyrule {
    HD_KEY_FIRST_DOT, /* "first_dot" (default): up to the first dot of the last component */
    HD_KEY_LAST_DOT,  /* "last_dot": up to the last dot of the last component */
    HD_KEY_DIR,       /* "dir": up to the last '/': every file of a directory is one sample */
    HD_KEY_NAME       /* "name": the whole name: every object is a sample of its own */
};

/* 0 or HD_EBADARG for an unknown rule name. */
int hd_keyrule_parse(const char *s, enum hd_keyrule *out);
const char *hd_keyrule_name(enum hd_keyrule r);
/* Length of name's sample key under rule (a prefix of name). */
size_t hd_sample_key(const char *name, enum hd_keyrule rule);

/* Name templates: PREFIX{START..END}SUFFIX, e.g. "train-{000000..}.tar" (open-ended: as many
 * as needed), "shard-{0000..0099}.tar" (at most 100 names), "img-{1..20}.jpg". The start's
 * digit count sets the zero padding. Without braces the template is a single literal name.
 * Names must be valid object names. */
struct hd_tmpl {
    char *prefix, *suffix;
    uint64_t start, end; /* end inclusive; UINT64_MAX when open-ended */
    int width;           /* zero padding; -1: a literal (one name) */
};
/* 0 or HD_EBADARG with the reason in msg. */
int hd_tmpl_parse(const char *s, struct hd_tmpl *t, char *msg, size_t msglen);
void hd_tmpl_cleanup(struct hd_tmpl *t);
/* Number of names (UINT64_MAX when open-ended). */
uint64_t hd_tmpl_count(const struct hd_tmpl *t);
/* Appends the i-th name (0-based). HD_EBADARG past the end. */
int hd_tmpl_name(const struct hd_tmpl *t, uint64_t i, struct hd_buf *out);

/* Bytes an object takes in a tar written by hoard: header(s) plus data padded to 512. */
uint64_t hd_tar_entry_size(const char *name, uint64_t size);

struct hd_plan_obj {
    const char *name;
    uint64_t size;
    const char *etag; /* may be NULL */
};

struct hd_plan_opts {
    uint64_t shard_size; /* target tar size in bytes (>= 1) */
    int shuffle;
    uint64_t seed;
    enum hd_keyrule rule;
    const struct hd_tmpl *tmpl;
    int fmt; /* the shards' format (HD_ARCH_*, common/tarindex.h): part of each digest, so
              * a rerun in another format rewrites the shards (0, a tar, adds nothing) */
};

struct hd_plan_sample {
    size_t first, n; /* objects order[first .. first+n) */
    size_t key_len;  /* key = objs[order[first]].name[0..key_len) */
};

struct hd_plan_shard {
    char *name;
    size_t first, n; /* samples sorder[first .. first+n) */
    uint64_t nobjs;
    uint64_t bytes;    /* data bytes of its objects */
    uint64_t tar_size; /* the archive's size, end-of-archive blocks included */
    char digest[17];   /* hex XXH64 of the shard name and every object's name, size, etag */
};

struct hd_plan {
    size_t *order;                  /* object indices sorted by (key, name) */
    struct hd_plan_sample *samples; /* in key order */
    size_t nsamples;
    size_t *sorder; /* sample indices in shard order (shuffled or not) */
    struct hd_plan_shard *shards;
    size_t nshards;
    uint64_t nobjs, bytes;
};

/* Plans objs (n >= 1; names unique). 0, HD_EBADARG (msg: e.g. more shards than the template
 * has names), or -ENOMEM. objs must outlive the plan. */
int hd_plan_build(const struct hd_plan_obj *objs, size_t n, const struct hd_plan_opts *o,
                  struct hd_plan *out, char *msg, size_t msglen);
void hd_plan_free(struct hd_plan *p);

/* The shards array of the job manifest: [{"name","target","digest","size","objects_bytes",
 * "samples":[{"key","objects":[{"name","size"}...]}...]}...], targets[i] naming shard i's
 * writer (NULL: omitted). A new reference or NULL on OOM. */
json_t *hd_plan_shards_json(const struct hd_plan *p, const struct hd_plan_obj *objs,
                            const char *const *targets);

#endif
