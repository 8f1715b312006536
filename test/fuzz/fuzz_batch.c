/* libFuzzer driver for the request bodies and arguments of batch GET and shard jobs:
 * hd_batch_parse (JSON bodies from clients), the index line of a sub-batch answer from
 * another target (hd_tarstream_group_parse), name templates and sample-key rules
 * (common/shardplan). The first byte picks the parser; the rest is its input. Parsed batches
 * must hold only valid names; parsed indexes must hold n records of a known kind that encode
 * back to an index that parses the same; template names must parse back to the same name. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/httputil.h"
#include "common/shardplan.h"
#include "common/tarstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void batch(const char *s, size_t n)
{
    struct hd_batch *b = NULL;
    char msg[256];
    size_t i;
    int rc = hd_batch_parse(s, n, &b, msg, sizeof(msg));

    if (rc == 0) {
        if (!b || b->n == 0 || b->n > HD_BATCH_MAX_ENTRIES)
            __builtin_trap();
        for (i = 0; i < b->n; i++)
            if (hd_bucket_name_check(b->e[i].bucket) < 0 ||
                hd_object_name_check(b->e[i].name, strlen(b->e[i].name)) < 0 ||
                (b->e[i].archpath && !*b->e[i].archpath) || (b->e[i].as && !*b->e[i].as))
                __builtin_trap();
        hd_batch_free(b);
    } else if ((rc != HD_EBADARG && rc != -ENOMEM) || b || !msg[0]) {
        __builtin_trap();
    }
}

static void tmpl(const char *s)
{
    struct hd_tmpl t;
    struct hd_buf b;
    char msg[256];
    uint64_t i;

    if (hd_tmpl_parse(s, &t, msg, sizeof(msg)) != 0)
        return;
    hd_buf_init(&b);
    for (i = 0; i < 3 && i < hd_tmpl_count(&t); i++) {
        hd_buf_reset(&b);
        if (hd_tmpl_name(&t, i, &b) == 0 && !b.oom &&
            (strncmp(b.data, t.prefix, strlen(t.prefix)) != 0 ||
             strcmp(b.data + b.len - strlen(t.suffix), t.suffix) != 0))
            __builtin_trap();
    }
    hd_buf_cleanup(&b);
    hd_tmpl_cleanup(&t);
    for (i = 0; i < 4; i++)
        if (hd_sample_key(s, (enum hd_keyrule)i) > strlen(s))
            __builtin_trap();
}

static void group_index(const char *s, size_t len, size_t n)
{
    struct hd_tar_grec *recs = NULL, *again = NULL;
    struct hd_buf b;
    size_t i;

    if (hd_tarstream_group_parse(s, len, n, &recs) < 0) {
        if (recs)
            __builtin_trap();
        return;
    }
    for (i = 0; i < n; i++)
        if (recs[i].kind > HD_GREC_FETCH || (recs[i].kind == HD_GREC_ERR && recs[i].err >= 0))
            __builtin_trap();
    hd_buf_init(&b);
    if (hd_tarstream_group_index(recs, n, &b) == 0 && !b.oom) {
        if (b.len == 0 || b.data[b.len - 1] != '\n' ||
            hd_tarstream_group_parse(b.data, b.len - 1, n, &again) < 0)
            __builtin_trap();
        for (i = 0; i < n; i++)
            if (again[i].kind != recs[i].kind || again[i].size != recs[i].size ||
                again[i].err != recs[i].err)
                __builtin_trap();
    }
    hd_tarstream_grecs_free(again, n);
    hd_tarstream_grecs_free(recs, n);
    hd_buf_cleanup(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1)
        return 0;
    s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if ((data[0] & 3) == 2)
        group_index(s, size - 1, (size_t)(data[0] >> 2) + 1); /* 1 to 64 records */
    else if (data[0] & 1)
        batch(s, size - 1);
    else
        tmpl(s);
    free(s);
    return 0;
}
