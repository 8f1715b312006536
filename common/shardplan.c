#include "common/shardplan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"

/* ---- sample keys ---- */

static const char *const rule_names[] = {"first_dot", "last_dot", "dir", "name"};

int hd_keyrule_parse(const char *s, enum hd_keyrule *out)
{
    size_t i;

    for (i = 0; i < sizeof(rule_names) / sizeof(rule_names[0]); i++) {
        if (strcmp(s, rule_names[i]) == 0) {
            *out = (enum hd_keyrule)i;
            return 0;
        }
    }
    return HD_EBADARG;
}

const char *hd_keyrule_name(enum hd_keyrule r)
{
    return (size_t)r < sizeof(rule_names) / sizeof(rule_names[0]) ? rule_names[r] : "?";
}

size_t hd_sample_key(const char *name, enum hd_keyrule rule)
{
    const char *last = strrchr(name, '/'), *base = last ? last + 1 : name, *dot;
    size_t n = strlen(name);

    switch (rule) {
    case HD_KEY_FIRST_DOT:
        dot = strchr(base, '.');
        return dot ? (size_t)(dot - name) : n;
    case HD_KEY_LAST_DOT:
        dot = strrchr(base, '.');
        return dot ? (size_t)(dot - name) : n;
    case HD_KEY_DIR:
        return last ? (size_t)(last - name) : n;
    default:
        return n;
    }
}

/* ---- templates ---- */

void hd_tmpl_cleanup(struct hd_tmpl *t)
{
    free(t->prefix);
    free(t->suffix);
    t->prefix = t->suffix = NULL;
}

static int parse_num(const char *s, size_t n, uint64_t *v)
{
    char d[24];

    if (n == 0 || n >= sizeof(d))
        return -1;
    memcpy(d, s, n);
    d[n] = '\0';
    return hd_parse_u64(d, v);
}

int hd_tmpl_parse(const char *s, struct hd_tmpl *t, char *msg, size_t msglen)
{
    const char *ob = strchr(s, '{'), *cb, *dots;
    struct hd_buf probe;
    int rc;

    memset(t, 0, sizeof(*t));
    if (!*s || strlen(s) > 1000) {
        snprintf(msg, msglen, "a name template must be 1-1000 bytes");
        return HD_EBADARG;
    }
    if (!ob) {
        if (strchr(s, '}')) {
            snprintf(msg, msglen, "template '%.100s': '}' without '{'", s);
            return HD_EBADARG;
        }
        t->prefix = strdup(s);
        t->suffix = strdup("");
        t->width = -1;
        t->end = 0;
        goto check;
    }
    cb = strchr(ob, '}');
    dots = strstr(ob, "..");
    if (!cb || !dots || dots > cb || strchr(cb + 1, '{') || strchr(cb + 1, '}')) {
        snprintf(msg, msglen,
                 "template '%.100s': expected PREFIX{START..END}SUFFIX or PREFIX{START..}SUFFIX",
                 s);
        return HD_EBADARG;
    }
    if (parse_num(ob + 1, (size_t)(dots - ob - 1), &t->start) < 0) {
        snprintf(msg, msglen, "template '%.100s': the range must start with digits", s);
        return HD_EBADARG;
    }
    if (dots + 2 == cb) {
        t->end = UINT64_MAX;
    } else if (parse_num(dots + 2, (size_t)(cb - dots - 2), &t->end) < 0 || t->end < t->start) {
        snprintf(msg, msglen, "template '%.100s': the range must end with digits >= its start", s);
        return HD_EBADARG;
    }
    t->width = (int)(dots - ob - 1);
    t->prefix = strndup(s, (size_t)(ob - s));
    t->suffix = strdup(cb + 1);
check:
    if (!t->prefix || !t->suffix) {
        hd_tmpl_cleanup(t);
        return -ENOMEM;
    }
    /* the first name must be a valid object name (the others only differ in digits) */
    hd_buf_init(&probe);
    rc = hd_tmpl_name(t, 0, &probe);
    if (rc == 0 && (probe.oom || hd_object_name_check(probe.data, probe.len) < 0))
        rc = HD_EBADARG;
    hd_buf_cleanup(&probe);
    if (rc < 0) {
        snprintf(msg, msglen, "template '%.100s' does not make valid object names", s);
        hd_tmpl_cleanup(t);
    }
    return rc;
}

uint64_t hd_tmpl_count(const struct hd_tmpl *t)
{
    if (t->width < 0)
        return 1;
    if (t->end == UINT64_MAX)
        return UINT64_MAX;
    return t->end - t->start + 1;
}

int hd_tmpl_name(const struct hd_tmpl *t, uint64_t i, struct hd_buf *out)
{
    if (i >= hd_tmpl_count(t) || (t->width >= 0 && i > UINT64_MAX - 1 - t->start))
        return HD_EBADARG;
    if (t->width < 0)
        return hd_buf_puts(out, t->prefix);
    return hd_buf_printf(out, "%s%0*llu%s", t->prefix, t->width, (unsigned long long)(t->start + i),
                         t->suffix);
}

/* ---- tar sizes ---- */

static uint64_t pad512(uint64_t n)
{
    return (n + 511) / 512 * 512;
}

static int digits(uint64_t v)
{
    int d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Length of a pax record "LEN key=value\n" (LEN counts itself). */
static uint64_t pax_record(size_t key, uint64_t value)
{
    uint64_t base = key + value + 3; /* ' ' '=' '\n' */
    int d = digits(base);

    if (digits(base + (uint64_t)d) > d)
        d++;
    return base + (uint64_t)d;
}

/* Whether libarchive's ustar header can hold the name (split at a '/' into a prefix of at
 * most 155 bytes and a name of at most 100). */
static int ustar_fits(const char *name, size_t len)
{
    size_t i;

    if (len <= 100)
        return 1;
    for (i = len - 101; i < len; i++)
        if (name[i] == '/')
            return i <= 155 && i + 1 < len;
    return 0;
}

uint64_t hd_tar_entry_size(const char *name, uint64_t size)
{
    size_t len = strlen(name), i;
    uint64_t records = 0;
    int ascii = 1;

    for (i = 0; i < len; i++)
        if ((unsigned char)name[i] >= 0x80)
            ascii = 0;
    if (!ascii || !ustar_fits(name, len))
        records += pax_record(4, len); /* path */
    if (size > 077777777777ull)
        records += pax_record(4, (uint64_t)digits(size)); /* size */
    return (records ? 512 + pad512(records) : 0) + 512 + pad512(size);
}

/* ---- planning ---- */

struct sort_ctx {
    const struct hd_plan_obj *objs;
    size_t *klen;
};

static int cmp_key(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);

    return c ? c : al < bl ? -1 : al > bl;
}

static int cmp_obj(const void *x, const void *y, void *arg)
{
    const struct sort_ctx *sc = arg;
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    const struct hd_plan_obj *o = sc->objs;
    int c = cmp_key(o[i].name, sc->klen[i], o[j].name, sc->klen[j]);

    return c ? c : strcmp(o[i].name, o[j].name);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void hd_plan_free(struct hd_plan *p)
{
    size_t i;

    for (i = 0; p->shards && i < p->nshards; i++)
        free(p->shards[i].name);
    free(p->shards);
    free(p->samples);
    free(p->sorder);
    free(p->order);
    memset(p, 0, sizeof(*p));
}

static void digest_shard(const struct hd_plan *p, const struct hd_plan_obj *objs, int fmt,
                         struct hd_plan_shard *sh)
{
    XXH64_state_t *st = XXH64_createState();
    char num[24];
    size_t s, k;

    if (!st) {
        snprintf(sh->digest, sizeof(sh->digest), "0000000000000000");
        return;
    }
    XXH64_reset(st, 0);
    XXH64_update(st, sh->name, strlen(sh->name) + 1);
    if (fmt) { /* a tar's digest stays what it was before formats */
        snprintf(num, sizeof(num), "fmt=%d", fmt);
        XXH64_update(st, num, strlen(num) + 1);
    }
    for (s = sh->first; s < sh->first + sh->n; s++) {
        const struct hd_plan_sample *sm = &p->samples[p->sorder[s]];
        for (k = sm->first; k < sm->first + sm->n; k++) {
            const struct hd_plan_obj *o = &objs[p->order[k]];
            XXH64_update(st, o->name, strlen(o->name) + 1);
            snprintf(num, sizeof(num), "%llu", (unsigned long long)o->size);
            XXH64_update(st, num, strlen(num) + 1);
            XXH64_update(st, o->etag ? o->etag : "", (o->etag ? strlen(o->etag) : 0) + 1);
        }
    }
    snprintf(sh->digest, sizeof(sh->digest), "%016llx", (unsigned long long)XXH64_digest(st));
    XXH64_freeState(st);
}

int hd_plan_build(const struct hd_plan_obj *objs, size_t n, const struct hd_plan_opts *o,
                  struct hd_plan *out, char *msg, size_t msglen)
{
    struct sort_ctx sc = {objs, NULL};
    size_t i, cap = 0, s;
    uint64_t acc = 0, seed = o->seed;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (n == 0 || o->shard_size == 0) {
        snprintf(msg, msglen, n ? "the shard size must be at least 1 byte" : "no objects");
        return HD_EBADARG;
    }
    out->order = malloc(n * sizeof(*out->order));
    sc.klen = malloc(n * sizeof(*sc.klen));
    out->samples = malloc(n * sizeof(*out->samples));
    if (!out->order || !sc.klen || !out->samples) {
        rc = -ENOMEM;
        goto fail;
    }
    for (i = 0; i < n; i++) {
        out->order[i] = i;
        sc.klen[i] = hd_sample_key(objs[i].name, o->rule);
        out->nobjs++;
        out->bytes += objs[i].size;
    }
    qsort_r(out->order, n, sizeof(*out->order), cmp_obj, &sc);
    for (i = 0; i < n; i++) {
        size_t k = out->order[i];
        struct hd_plan_sample *last = out->nsamples ? &out->samples[out->nsamples - 1] : NULL;
        if (last && last->key_len == sc.klen[k] &&
            memcmp(objs[out->order[last->first]].name, objs[k].name, sc.klen[k]) == 0) {
            last->n++;
            continue;
        }
        out->samples[out->nsamples].first = i;
        out->samples[out->nsamples].n = 1;
        out->samples[out->nsamples].key_len = sc.klen[k];
        out->nsamples++;
    }
    if (!(out->sorder = malloc(out->nsamples * sizeof(*out->sorder)))) {
        rc = -ENOMEM;
        goto fail;
    }
    for (i = 0; i < out->nsamples; i++)
        out->sorder[i] = i;
    if (o->shuffle)
        for (i = out->nsamples - 1; i > 0; i--) {
            size_t j = (size_t)(splitmix64(&seed) % (uint64_t)(i + 1)), t = out->sorder[i];
            out->sorder[i] = out->sorder[j];
            out->sorder[j] = t;
        }
    /* greedy packing: a shard closes as soon as it reaches the target size, so every shard
     * but the last holds at least shard_size bytes and less than shard_size plus its last
     * sample */
    for (s = 0; s < out->nsamples; s++) {
        const struct hd_plan_sample *sm = &out->samples[out->sorder[s]];
        struct hd_plan_shard *sh;
        uint64_t ssize = 0, sbytes = 0;
        size_t k;

        for (k = sm->first; k < sm->first + sm->n; k++) {
            const struct hd_plan_obj *ob = &objs[out->order[k]];
            ssize += hd_tar_entry_size(ob->name, ob->size);
            sbytes += ob->size;
        }
        if (out->nshards == 0 || acc >= o->shard_size) {
            struct hd_buf nm;
            if (out->nshards == cap) {
                size_t nc = cap ? cap * 2 : 64;
                struct hd_plan_shard *v = realloc(out->shards, nc * sizeof(*v));
                if (!v) {
                    rc = -ENOMEM;
                    goto fail;
                }
                out->shards = v;
                cap = nc;
            }
            sh = &out->shards[out->nshards];
            memset(sh, 0, sizeof(*sh));
            hd_buf_init(&nm);
            rc = hd_tmpl_name(o->tmpl, out->nshards, &nm);
            if (rc < 0 || nm.oom) {
                hd_buf_cleanup(&nm);
                if (rc == 0)
                    rc = -ENOMEM;
                else
                    snprintf(msg, msglen,
                             "the name template has %llu names, too few for the shards needed "
                             "(%zu samples left at shard %zu); raise the shard size or widen "
                             "the range",
                             (unsigned long long)hd_tmpl_count(o->tmpl), out->nsamples - s,
                             out->nshards);
                goto fail;
            }
            sh->name = hd_buf_steal(&nm, NULL);
            sh->first = s;
            out->nshards++;
            acc = 0;
        }
        sh = &out->shards[out->nshards - 1];
        sh->n++;
        sh->nobjs += sm->n;
        sh->bytes += sbytes;
        acc += ssize;
        sh->tar_size = acc + 1024; /* two zero blocks end the archive */
    }
    for (i = 0; i < out->nshards; i++)
        digest_shard(out, objs, o->fmt, &out->shards[i]);
    free(sc.klen);
    return 0;
fail:
    if (rc == -ENOMEM)
        snprintf(msg, msglen, "out of memory");
    free(sc.klen);
    hd_plan_free(out);
    return rc;
}

json_t *hd_plan_shards_json(const struct hd_plan *p, const struct hd_plan_obj *objs,
                            const char *const *targets)
{
    json_t *arr = json_array();
    size_t i, s, k;

    if (!arr)
        return NULL;
    for (i = 0; i < p->nshards; i++) {
        const struct hd_plan_shard *sh = &p->shards[i];
        json_t *samples = json_array(), *j;
        for (s = sh->first; samples && s < sh->first + sh->n; s++) {
            const struct hd_plan_sample *sm = &p->samples[p->sorder[s]];
            json_t *ol = json_array();
            for (k = sm->first; ol && k < sm->first + sm->n; k++) {
                const struct hd_plan_obj *o = &objs[p->order[k]];
                json_array_append_new(
                    ol, json_pack("{s:s, s:I}", "name", o->name, "size", (json_int_t)o->size));
            }
            json_array_append_new(samples,
                                  json_pack("{s:s%, s:o}", "key", objs[p->order[sm->first]].name,
                                            sm->key_len, "objects", ol));
        }
        j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "name", sh->name, "digest", sh->digest,
                      "size", (json_int_t)sh->tar_size, "objects_bytes", (json_int_t)sh->bytes,
                      "objects", (json_int_t)sh->nobjs, "samples", samples);
        if (!j || json_array_append_new(arr, j) < 0) {
            json_decref(arr);
            return NULL;
        }
        if (targets && targets[i])
            json_object_set_new(j, "target", json_string(targets[i]));
    }
    return arr;
}
