/* Unit tests for target/store_tar (the tar index in the catalog): state before and after a
 * save, member lookups and ordered listing, duplicate names keeping the last, a save for a
 * file the object no longer uses being dropped, and the schema triggers removing an index
 * when its object is overwritten or deleted. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "target/store/store.h"
#include "target/store/tar.h"
#include "test/unit/hd_test.h"

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static int put_obj(struct hd_store *st, const char *name, const char *body, struct hd_obj_meta *m)
{
    struct hd_put *p;
    int rc;

    if ((rc = hd_put_begin(st, "bkt", name, &p)) < 0)
        return rc;
    if ((rc = hd_put_write(p, body, strlen(body))) == 0)
        rc = hd_put_commit(p, NULL, NULL);
    hd_put_free(p);
    return rc < 0 ? rc : hd_store_lookup(st, "bkt", name, m);
}

struct listed {
    char names[8][32];
    uint64_t off[8];
    size_t n;
};

static int list_cb(void *arg, const char *name, uint64_t off, uint64_t size)
{
    struct listed *l = arg;

    (void)size;
    if (l->n < 8) {
        snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
        l->off[l->n++] = off;
    }
    return 0;
}

HD_SUITE(store_tar_index)
{
    char root[] = "/tmp/hd-storetar-XXXXXX", data[64], mp1[64], mp2[64], msg[128];
    const char *mps[2] = {mp1, mp2};
    struct hd_store_cfg cfg = {.data_dir = data, .mountpaths = mps, .nmp = 2};
    struct hd_tar_ent ents[3] = {{"b.jpg", 2048, 10}, {"a.cls", 512, 3}, {"b.jpg", 4096, 11}};
    struct hd_obj_meta m, m2;
    struct hd_store *st = NULL;
    struct listed l;
    uint64_t n = 0, off = 0, size = 0;

    CHECK(mkdtemp(root) != NULL);
    snprintf(data, sizeof(data), "%s/data", root);
    snprintf(mp1, sizeof(mp1), "%s/mp1", root);
    snprintf(mp2, sizeof(mp2), "%s/mp2", root);
    CHECK_EQ_INT(hd_store_open(&cfg, &st), 0);
    if (!st)
        return;
    CHECK_EQ_INT(hd_store_bucket_create(st, "bkt", "ais"), 0);
    CHECK_EQ_INT(put_obj(st, "s.tar", "not really a tar", &m), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m, &n, msg, sizeof(msg)), 1); /* not indexed */
    CHECK_EQ_INT(hd_store_tar_save(st, "bkt", "s.tar", &m, ents, 3, 0, NULL), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m, &n, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(hd_store_tar_member(st, &m, "b.jpg", &off, &size), 0);
    CHECK_EQ_INT(off, 4096); /* a duplicate name: the last one wins, as in tar */
    CHECK_EQ_INT(size, 11);
    CHECK_EQ_INT(hd_store_tar_member(st, &m, "zz", &off, &size), HD_ENOSUCHMEMBER);
    memset(&l, 0, sizeof(l));
    CHECK_EQ_INT(hd_store_tar_list(st, &m, list_cb, &l), 0);
    CHECK_EQ_INT(l.n, 2);
    CHECK_EQ_STR(l.names[0], "a.cls"); /* in archive order */
    CHECK_EQ_STR(l.names[1], "b.jpg");

    /* a verdict "not a tar" is kept with its reason */
    CHECK_EQ_INT(put_obj(st, "bad.tar", "x", &m2), 0);
    CHECK_EQ_INT(hd_store_tar_save(st, "bkt", "bad.tar", &m2, NULL, 0, HD_ENOTARCHIVE, "why"), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m2, &n, msg, sizeof(msg)), HD_ENOTARCHIVE);
    CHECK_EQ_STR(msg, "why");
    hd_obj_meta_cleanup(&m2);

    /* overwrite: the old file's index goes with it (trigger); a late save for the old file
     * is dropped */
    CHECK_EQ_INT(put_obj(st, "s.tar", "second version", &m2), 0);
    CHECK(strcmp(m.path, m2.path) != 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m, &n, msg, sizeof(msg)), 1);
    CHECK_EQ_INT(hd_store_tar_state(st, &m2, &n, msg, sizeof(msg)), 1);
    CHECK_EQ_INT(hd_store_tar_save(st, "bkt", "s.tar", &m, ents, 3, 0, NULL), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m, &n, msg, sizeof(msg)), 1);
    CHECK_EQ_INT(hd_store_tar_save(st, "bkt", "s.tar", &m2, ents, 1, 0, NULL), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m2, &n, msg, sizeof(msg)), 0);
    /* delete: gone too */
    CHECK_EQ_INT(hd_store_delete(st, "bkt", "s.tar"), 0);
    CHECK_EQ_INT(hd_store_tar_state(st, &m2, &n, msg, sizeof(msg)), 1);
    CHECK_EQ_INT(hd_store_tar_member(st, &m2, "b.jpg", &off, &size), HD_ENOSUCHMEMBER);
    hd_obj_meta_cleanup(&m);
    hd_obj_meta_cleanup(&m2);
    hd_store_close(st);
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}
