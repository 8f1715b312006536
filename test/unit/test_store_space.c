/* Unit tests for target/store_space: usage kept exact by the catalog triggers (insert,
 * overwrite, delete, bucket destroy), the out-of-space mark refusing a sized begin and a
 * write that would cross it, batched access times, and LRU candidates in atime order limited
 * to the given buckets. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "target/store/store.h"
#include "test/unit/hd_test.h"

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

static int put(struct hd_store *st, const char *b, const char *n, size_t size)
{
    struct hd_put *p = NULL;
    char *buf = calloc(1, size ? size : 1);
    int rc;

    if (!buf)
        return -ENOMEM;
    if ((rc = hd_put_begin(st, b, n, &p)) == 0 && (rc = hd_put_write(p, buf, size)) == 0)
        rc = hd_put_commit(p, NULL, NULL);
    hd_put_free(p);
    free(buf);
    return rc;
}

static void nap(void)
{
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
}

HD_SUITE(store_space)
{
    char root[64] = "/tmp/hd-space-XXXXXX", data[128], mp[128];
    const char *mps[1] = {mp};
    struct hd_store_cfg cfg = {
        .data_dir = data, .mountpaths = mps, .nmp = 1, .capacity = 10000, .oos_pct = 80};
    struct hd_store *st = NULL;
    struct hd_mp_usage u;
    struct hd_put *p = NULL;
    struct hd_lru_ent *v = NULL;
    const char *cached[] = {"cb"};
    char buf[4000];
    size_t n = 0;

    CHECK(mkdtemp(root) != NULL);
    snprintf(data, sizeof(data), "%s/data", root);
    snprintf(mp, sizeof(mp), "%s/mp1", root);
    CHECK_EQ_INT(hd_store_open(&cfg, &st), 0);
    if (!st)
        return;
    CHECK_EQ_INT(hd_store_bucket_create(st, "cb", "aws"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(st, "nb", "ais"), 0);

    /* usage follows every change of the catalog */
    CHECK_EQ_INT(put(st, "cb", "a", 1000), 0);
    nap();
    CHECK_EQ_INT(put(st, "cb", "b", 2000), 0);
    nap();
    CHECK_EQ_INT(put(st, "cb", "c", 3000), 0);
    CHECK_EQ_INT(put(st, "nb", "n", 10), 0);
    CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
    CHECK_EQ_INT(u.used, 6010);
    CHECK_EQ_INT(u.objects, 4);
    CHECK_EQ_INT(u.capacity, 10000);
    CHECK_EQ_INT(put(st, "nb", "n", 500), 0); /* overwrite */
    CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
    CHECK_EQ_INT(u.used, 6500);
    CHECK_EQ_INT(u.objects, 4);

    /* the out-of-space mark: 80% of 10000 */
    CHECK_EQ_INT(hd_put_begin_sized(st, "nb", "big", 1600, &p), -ENOSPC);
    CHECK(p == NULL);
    CHECK_EQ_INT(hd_put_begin_sized(st, "nb", "big", 1000, &p), 0);
    memset(buf, 'x', sizeof(buf));
    CHECK_EQ_INT(hd_put_write(p, buf, 1400), 0);
    CHECK_EQ_INT(hd_put_write(p, buf, 200), -ENOSPC); /* would cross the mark */
    hd_put_free(p);
    CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
    CHECK_EQ_INT(u.used, 6500);

    /* LRU: oldest first, only the given buckets; a touch makes an object recent */
    CHECK_EQ_INT(hd_store_lru_batch(st, 0, cached, 1, 10, &v, &n), 0);
    CHECK_EQ_INT(n, 3);
    if (n == 3) {
        CHECK_EQ_STR(v[0].name, "a");
        CHECK_EQ_STR(v[2].name, "c");
        CHECK_EQ_INT(v[1].size, 2000);
    }
    hd_store_lru_free(v, n);
    nap();
    hd_store_touch(st, "cb", "a");
    hd_store_touch(st, "nb", "n");
    CHECK_EQ_INT(hd_store_atime_flush(st), 0);
    CHECK_EQ_INT(hd_store_lru_batch(st, 0, cached, 1, 2, &v, &n), 0);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_STR(v[0].name, "b");
        CHECK_EQ_STR(v[1].name, "c");
        CHECK_EQ_INT(hd_store_delete_if(st, 0, v[0].bucket, v[0].name, v[0].etag, v[0].mtime_ms),
                     0);
    }
    hd_store_lru_free(v, n);
    CHECK_EQ_INT(hd_store_lru_batch(st, 0, cached, 0, 2, &v, &n), 0);
    CHECK_EQ_INT(n, 0);
    hd_store_lru_free(v, n);
    CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
    CHECK_EQ_INT(u.used, 4500);

    /* a destroyed bucket takes its bytes with it */
    CHECK_EQ_INT(hd_store_bucket_destroy(st, "cb"), 0);
    CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
    CHECK_EQ_INT(u.used, 500);
    CHECK_EQ_INT(u.objects, 1);
    hd_store_close(st);

    /* reopened: the usage row persists */
    st = NULL;
    CHECK_EQ_INT(hd_store_open(&cfg, &st), 0);
    if (st) {
        CHECK_EQ_INT(hd_store_mp_usage(st, 0, &u), 0);
        CHECK_EQ_INT(u.used, 500);
        hd_store_close(st);
    }
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}
