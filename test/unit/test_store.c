/* Unit tests for target/store on temp directories with 1, 2 and 3 mountpaths: buckets,
 * object put/commit/lookup/open/delete, overwrite and abort leaving no stray files, crash
 * recovery of tmp/, HRW placement across mountpaths, and listing compared against a
 * brute-force reference (prefix, delimiter, max, start_after, paging by res.last). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "target/store/store.h"
#include "target/store/int.h"
#include "test/unit/hd_test.h"

/* ---- fixture: a store on a fresh temp directory ---- */

struct fx {
    char root[64];
    char data[128];
    char mp[3][128];
    char real[3][PATH_MAX]; /* realpath of each mountpath */
    const char *mps[3];
    uint64_t dig[3];
    size_t nmp;
    int fsync;
    struct hd_store *st;
};

static int fx_start(struct fx *f)
{
    /* a small row cache, so that every suite below also runs through it and its evictions */
    struct hd_store_cfg cfg = {.data_dir = f->data,
                               .mountpaths = f->mps,
                               .nmp = f->nmp,
                               .fsync = f->fsync,
                               .meta_cache = 200,
                               .open_files = 50};
    size_t i;
    int rc = hd_store_open(&cfg, &f->st);

    if (rc < 0) {
        fprintf(stderr, "  hd_store_open: %d (%s)\n", rc, hd_strerror(rc));
        f->st = NULL;
        return rc;
    }
    for (i = 0; i < f->nmp; i++) {
        if (!realpath(f->mp[i], f->real[i]))
            return -errno;
        f->dig[i] = hd_hrw_digest(f->real[i], strlen(f->real[i]));
    }
    return 0;
}

static int fx_open(struct fx *f, size_t nmp, int fsync_on)
{
    size_t i;

    memset(f, 0, sizeof(*f));
    snprintf(f->root, sizeof(f->root), "/tmp/hd-store-XXXXXX");
    if (!mkdtemp(f->root))
        return -errno;
    snprintf(f->data, sizeof(f->data), "%s/data", f->root);
    for (i = 0; i < nmp; i++) {
        snprintf(f->mp[i], sizeof(f->mp[i]), "%s/mp%zu", f->root, i + 1);
        f->mps[i] = f->mp[i];
    }
    f->nmp = nmp;
    f->fsync = fsync_on;
    return fx_start(f);
}

static int fx_reopen(struct fx *f)
{
    hd_store_close(f->st);
    f->st = NULL;
    return fx_start(f);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rm_rf(const char *path)
{
    nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void fx_close(struct fx *f)
{
    hd_store_close(f->st);
    f->st = NULL;
    if (f->root[0])
        rm_rf(f->root);
}

static size_t nfiles;

static int count_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)path;
    (void)sb;
    (void)ftw;
    if (flag == FTW_F)
        nfiles++;
    return 0;
}

/* Regular files under dir (recursively); 0 if dir is missing. */
static size_t count_files(const char *dir)
{
    nfiles = 0;
    nftw(dir, count_cb, 16, FTW_PHYS);
    return nfiles;
}

/* Files under MP/sub summed over all mountpaths. */
static size_t count_all(const struct fx *f, const char *sub)
{
    char d[PATH_MAX + 16];
    size_t i, n = 0;

    for (i = 0; i < f->nmp; i++) {
        snprintf(d, sizeof(d), "%s/%s", f->real[i], sub);
        n += count_files(d);
    }
    return n;
}

static size_t count_mp(const struct fx *f, size_t i, const char *sub)
{
    char d[PATH_MAX + 16];

    snprintf(d, sizeof(d), "%s/%s", f->real[i], sub);
    return count_files(d);
}

/* The mountpath index HRW chooses for bucket/key, computed independently of the store. */
static int expect_mp(const struct fx *f, const char *bucket, const char *key)
{
    struct hd_buf u;
    uint64_t d;

    hd_buf_init(&u);
    hd_hrw_uname(&u, "ais", NULL, bucket, key);
    d = hd_hrw_digest(u.data, u.len);
    hd_buf_cleanup(&u);
    return hd_hrw_pick(f->dig, NULL, f->nmp, d);
}

static int path_on_mp(const struct fx *f, size_t i, const char *path)
{
    size_t n = strlen(f->real[i]);

    return path && strncmp(path, f->real[i], n) == 0 && strncmp(path + n, "/objs/", 6) == 0;
}

static void md5hex(const void *p, size_t n, char out[33])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0, i;
    static const char hx[] = "0123456789abcdef";

    EVP_Digest(p, n, md, &mdlen, EVP_md5(), NULL);
    for (i = 0; i < 16; i++) {
        out[2 * i] = hx[md[i] >> 4];
        out[2 * i + 1] = hx[md[i] & 15];
    }
    out[32] = '\0';
}

/* Writes data in uneven chunks (to cross the store's write buffer at odd offsets). */
static int put_obj(struct hd_store *st, const char *bucket, const char *key, const void *data,
                   size_t len, const struct hd_put_attrs *attrs, struct hd_obj_meta *out)
{
    static const size_t chunks[] = {1, 4095, 65536, 300000, 7, 131072};
    struct hd_put *p = NULL;
    const char *d = data;
    size_t off = 0, c = 0;
    int rc;

    if ((rc = hd_put_begin(st, bucket, key, &p)) < 0)
        return rc;
    while (off < len) {
        size_t k = chunks[c++ % (sizeof(chunks) / sizeof(chunks[0]))];
        if (k > len - off)
            k = len - off;
        if ((rc = hd_put_write(p, d + off, k)) < 0)
            goto out;
        off += k;
    }
    rc = hd_put_commit(p, attrs, out);
out:
    hd_put_free(p);
    return rc;
}

static int put_str(struct hd_store *st, const char *bucket, const char *key, const char *s)
{
    return put_obj(st, bucket, key, s, strlen(s), NULL, NULL);
}

/* Reads the whole fd (closing it); NULL on error. */
static char *read_fd(int fd, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    ssize_t r;

    while (b) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        r = read(fd, b + n, cap - n);
        if (r < 0) {
            free(b);
            b = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return b;
}

/* Opens bucket/key through the store and compares its bytes with want. */
static int content_is(struct hd_store *st, const char *bucket, const char *key, const void *want,
                      size_t wlen)
{
    struct hd_obj_meta m;
    int fd = -1, ok;
    size_t n = 0;
    char *got;

    if (hd_store_open_object(st, bucket, key, &m, &fd) != 0)
        return 0;
    got = read_fd(fd, &n);
    ok = got && n == wlen && m.size == wlen && memcmp(got, want, wlen) == 0;
    free(got);
    hd_obj_meta_cleanup(&m);
    return ok;
}

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; p && i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
    return p;
}

/* ---- buckets ---- */

static void buckets_on(size_t nmp)
{
    struct fx f;
    struct hd_bucket_info *bl = NULL;
    size_t n = 0, j;
    int64_t now = (int64_t)time(NULL);

    CHECK_EQ_INT(fx_open(&f, nmp, 0), 0);
    if (!f.st)
        goto out;

    CHECK_EQ_INT(hd_store_bucket_list(f.st, &bl, &n), 0);
    CHECK_EQ_INT(n, 0);
    free(bl);

    CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b1"), HD_ENOSUCHBUCKET);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "b1", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b1"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "b1", "ais"), HD_EBUCKETEXISTS);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "zz", "aws"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "a0", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b"), HD_ENOSUCHBUCKET); /* no prefix match */

    CHECK_EQ_INT(hd_store_bucket_list(f.st, &bl, &n), 0);
    CHECK_EQ_INT(n, 3);
    if (n == 3) {
        CHECK_EQ_STR(bl[0].name, "a0");
        CHECK_EQ_STR(bl[1].name, "b1");
        CHECK_EQ_STR(bl[2].name, "zz");
        CHECK_EQ_STR(bl[1].provider, "ais");
        CHECK_EQ_STR(bl[2].provider, "aws");
        CHECK(bl[0].created >= now - 5 && bl[0].created <= now + 5);
    }
    free(bl);

    /* Not empty while any object exists, whichever mountpath it is on. */
    for (j = 0; j < nmp; j++) {
        char key[32];
        int k;
        for (k = 0; k < 10000; k++) {
            snprintf(key, sizeof(key), "obj%d", k);
            if (expect_mp(&f, "b1", key) == (int)j)
                break;
        }
        CHECK_EQ_INT(put_str(f.st, "b1", key, "x"), 0);
        CHECK_EQ_INT(hd_store_bucket_delete(f.st, "b1"), HD_EBUCKETNOTEMPTY);
        CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b1"), 0);
        CHECK_EQ_INT(hd_store_delete(f.st, "b1", key), 0);
        CHECK_EQ_INT(hd_store_bucket_delete(f.st, "b1"), 0);
        CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b1"), HD_ENOSUCHBUCKET);
        CHECK_EQ_INT(hd_store_bucket_create(f.st, "b1", "ais"), 0);
    }
    /* An object in another bucket does not make b1 non-empty. */
    CHECK_EQ_INT(put_str(f.st, "zz", "k", "x"), 0);
    CHECK_EQ_INT(hd_store_bucket_delete(f.st, "b1"), 0);
    CHECK_EQ_INT(hd_store_bucket_delete(f.st, "b1"), HD_ENOSUCHBUCKET);
    CHECK_EQ_INT(hd_store_bucket_delete(f.st, "nope"), HD_ENOSUCHBUCKET);

    /* A 63-byte name (the S3 maximum) round-trips. */
    {
        char n63[64];
        int found = 0;
        memset(n63, 'n', 63);
        n63[63] = '\0';
        CHECK_EQ_INT(hd_store_bucket_create(f.st, n63, "ais"), 0);
        CHECK_EQ_INT(hd_store_bucket_exists(f.st, n63), 0);
        CHECK_EQ_INT(hd_store_bucket_list(f.st, &bl, &n), 0);
        for (j = 0; j < n; j++)
            found += strcmp(bl[j].name, n63) == 0;
        CHECK_EQ_INT(found, 1);
        free(bl);
        CHECK_EQ_INT(hd_store_bucket_delete(f.st, n63), 0);
        CHECK_EQ_INT(hd_store_bucket_exists(f.st, n63), HD_ENOSUCHBUCKET);
    }

    /* Listing a missing bucket. */
    {
        struct hd_list_opts o = {NULL, NULL, NULL, 10};
        struct hd_list_res r;
        CHECK_EQ_INT(hd_store_list(f.st, "b1", &o, &r), HD_ENOSUCHBUCKET);
    }

    /* The bucket list survives close/reopen (and b1 stays deleted). */
    CHECK_EQ_INT(fx_reopen(&f), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_list(f.st, &bl, &n), 0);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_STR(bl[0].name, "a0");
        CHECK_EQ_STR(bl[1].name, "zz");
        CHECK_EQ_STR(bl[1].provider, "aws");
    }
    free(bl);
    CHECK_EQ_INT(hd_store_bucket_exists(f.st, "zz"), 0);
    CHECK_EQ_INT(hd_store_bucket_exists(f.st, "b1"), HD_ENOSUCHBUCKET);
    CHECK_EQ_INT(hd_store_bucket_delete(f.st, "zz"), HD_EBUCKETNOTEMPTY);
    CHECK(content_is(f.st, "zz", "k", "x", 1));
out:
    fx_close(&f);
}

/* A name longer than struct hd_bucket_info.name holds must be refused or work fully; never
 * "created" and then not found (callers validate names today, the store should not rely on
 * it silently). */
static void long_bucket_name(void)
{
    struct fx f;
    char n70[71];
    int rc;

    memset(n70, 'm', 70);
    n70[70] = '\0';
    CHECK_EQ_INT(fx_open(&f, 1, 0), 0);
    if (!f.st)
        goto out;
    rc = hd_store_bucket_create(f.st, n70, "ais");
    if (rc == 0) {
        if (hd_store_bucket_exists(f.st, n70) != 0)
            fprintf(stderr, "  70-byte bucket name: create returned 0, exists says "
                            "NoSuchBucket\n");
        CHECK_EQ_INT(hd_store_bucket_exists(f.st, n70), 0);
        CHECK_EQ_INT(hd_store_bucket_delete(f.st, n70), 0);
    }
    CHECK_EQ_INT(hd_store_bucket_exists(f.st, n70), HD_ENOSUCHBUCKET);
out:
    fx_close(&f);
}

HD_SUITE(store_buckets)
{
    buckets_on(1);
    buckets_on(3);
    long_bucket_name();
}

/* ---- objects ---- */

static void objects_on(size_t nmp, int fsync_on)
{
    static const char key[] = "dir/obj.txt";
    const size_t big = 600 * 1024 + 123;
    struct hd_put_attrs attrs = {.ctype = "text/plain",
                                 .meta = "{\"color\":\"blue\"}",
                                 .ck_type = "CRC32",
                                 .ck_val = "AAAAAA=="};
    unsigned char *data = pattern(big, 1), *data2 = pattern(1000, 2), md[16];
    char hex[33], hex2[33], got[33], oldpath[PATH_MAX] = "";
    struct hd_obj_meta m, out;
    struct hd_put *p = NULL;
    struct stat sb;
    struct fx f;
    int64_t t0, t1;
    int want, fd = -1;
    size_t i;

    CHECK(data && data2);
    CHECK_EQ_INT(fx_open(&f, nmp, fsync_on), 0);
    if (!f.st || !data || !data2)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "bkt", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "bkt2", "ais"), 0);
    md5hex(data, big, hex);
    md5hex(data2, 1000, hex2);
    want = expect_mp(&f, "bkt", key);

    /* Streaming put: size and MD5 as we go, then commit. */
    /* the wall clock, with ten minutes of slack: a VM's clock can be stepped meanwhile (a
     * CI run saw it move by more than a second here) */
    t0 = (int64_t)time(NULL) * 1000 - 600000;
    CHECK_EQ_INT(hd_put_begin(f.st, "bkt", key, &p), 0);
    if (!p)
        goto out;
    CHECK_EQ_INT(count_mp(&f, (size_t)want, "tmp"), 1); /* the temp file, on the HRW mp */
    CHECK_EQ_INT(count_all(&f, "tmp"), 1);
    CHECK_EQ_INT(hd_put_write(p, data, 100), 0);
    CHECK_EQ_INT(hd_put_write(p, data + 100, 300 * 1024), 0);
    CHECK_EQ_INT(hd_put_write(p, data + 100 + 300 * 1024, big - 100 - 300 * 1024), 0);
    CHECK_EQ_INT(hd_put_size(p), big);
    hd_put_md5(p, md);
    for (i = 0; i < 16; i++)
        snprintf(got + 2 * i, 3, "%02x", md[i]);
    CHECK_EQ_STR(got, hex);
    memset(&out, 0, sizeof(out));
    CHECK_EQ_INT(hd_put_commit(p, &attrs, &out), 0);
    hd_put_free(p);
    p = NULL;
    t1 = (int64_t)time(NULL) * 1000 + 600000;
    CHECK_EQ_INT(out.size, big);
    CHECK_EQ_STR(out.etag, hex);
    CHECK_EQ_STR(out.ck_type, "CRC32");
    CHECK_EQ_STR(out.ck_val, "AAAAAA==");
    CHECK(out.mtime_ms >= t0 && out.mtime_ms <= t1);
    hd_obj_meta_cleanup(&out);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    CHECK_EQ_INT(count_all(&f, "objs"), 1);
    CHECK_EQ_INT(count_mp(&f, (size_t)want, "objs"), 1);

    /* Lookup returns everything that was stored. */
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), 0);
    CHECK_EQ_INT(m.size, big);
    CHECK_EQ_STR(m.etag, hex);
    CHECK_EQ_STR(m.ck_type, "CRC32");
    CHECK_EQ_STR(m.ck_val, "AAAAAA==");
    CHECK_EQ_STR(m.ctype, "text/plain");
    CHECK_EQ_STR(m.meta, "{\"color\":\"blue\"}");
    CHECK(m.mtime_ms >= t0 && m.mtime_ms <= t1);
    CHECK(path_on_mp(&f, (size_t)want, m.path));
    CHECK(m.path && stat(m.path, &sb) == 0 && (size_t)sb.st_size == big);
    if (m.path)
        snprintf(oldpath, sizeof(oldpath), "%s", m.path);
    hd_obj_meta_cleanup(&m);
    CHECK(m.path == NULL && m.ctype == NULL && m.meta == NULL);

    /* open_object gives the bytes back. */
    CHECK_EQ_INT(hd_store_open_object(f.st, "bkt", key, &m, &fd), 0);
    CHECK(fd >= 0);
    if (fd >= 0) {
        size_t n = 0;
        char *b = read_fd(fd, &n);
        CHECK_EQ_INT(n, big);
        CHECK(b && memcmp(b, data, big) == 0);
        free(b);
    }
    CHECK_EQ_STR(m.etag, hex);
    CHECK_EQ_STR(m.ctype, "text/plain");
    hd_obj_meta_cleanup(&m);

    /* Overwrite: new content and metadata, old file gone, exactly one content file. */
    CHECK_EQ_INT(put_obj(f.st, "bkt", key, data2, 1000, NULL, &out), 0);
    CHECK_EQ_STR(out.etag, hex2);
    CHECK_EQ_STR(out.ck_type, "");
    hd_obj_meta_cleanup(&out);
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), 0);
    CHECK_EQ_INT(m.size, 1000);
    CHECK_EQ_STR(m.etag, hex2);
    CHECK(m.ctype == NULL);
    CHECK(m.meta == NULL);
    CHECK_EQ_STR(m.ck_type, "");
    CHECK_EQ_STR(m.ck_val, "");
    CHECK(m.path && strcmp(m.path, oldpath) != 0);
    hd_obj_meta_cleanup(&m);
    CHECK(stat(oldpath, &sb) < 0 && errno == ENOENT);
    CHECK(content_is(f.st, "bkt", key, data2, 1000));
    CHECK_EQ_INT(count_all(&f, "objs"), 1);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);

    /* A caller-supplied ETag (multipart) is stored as given. */
    {
        struct hd_put_attrs a2 = {.ctype = "application/x-tar",
                                  .etag = "0123456789abcdef0123456789abcdef-3"};
        CHECK_EQ_INT(put_obj(f.st, "bkt", key, data2, 10, &a2, NULL), 0);
        CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), 0);
        CHECK_EQ_STR(m.etag, "0123456789abcdef0123456789abcdef-3");
        CHECK_EQ_STR(m.ctype, "application/x-tar");
        CHECK_EQ_INT(m.size, 10);
        hd_obj_meta_cleanup(&m);
        CHECK_EQ_INT(count_all(&f, "objs"), 1);
    }

    /* Empty object. */
    CHECK_EQ_INT(put_obj(f.st, "bkt", "empty", "", 0, NULL, NULL), 0);
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", "empty", &m), 0);
    CHECK_EQ_INT(m.size, 0);
    CHECK_EQ_STR(m.etag, "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(path_on_mp(&f, (size_t)expect_mp(&f, "bkt", "empty"), m.path));
    hd_obj_meta_cleanup(&m);
    CHECK(content_is(f.st, "bkt", "empty", "", 0));
    CHECK_EQ_INT(count_all(&f, "objs"), 2);

    /* Names that must never become paths: unicode, slashes, dots, a 1024-byte name. */
    {
        static const char *const odd[] = {
            "ü/日本/ key with spaces?&=#%", "../../etc/passwd", "a//b", "/lead", ".", "trailing/"};
        char *longkey = malloc(1025);
        for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
            CHECK_EQ_INT(put_str(f.st, "bkt", odd[i], odd[i]), 0);
            CHECK(content_is(f.st, "bkt", odd[i], odd[i], strlen(odd[i])));
        }
        if (longkey) {
            memset(longkey, 'L', 1024);
            longkey[1024] = '\0';
            CHECK_EQ_INT(put_str(f.st, "bkt", longkey, "long"), 0);
            CHECK(content_is(f.st, "bkt", longkey, "long", 4));
            CHECK_EQ_INT(hd_store_delete(f.st, "bkt", longkey), 0);
            free(longkey);
        }
        for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
            CHECK_EQ_INT(hd_store_delete(f.st, "bkt", odd[i]), 0);
        CHECK_EQ_INT(count_all(&f, "objs"), 2);
    }

    /* Same name in another bucket is a different object. */
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt2", key, &m), HD_ENOSUCHKEY);
    CHECK_EQ_INT(put_obj(f.st, "bkt2", key, data, 5000, NULL, NULL), 0);
    CHECK(content_is(f.st, "bkt2", key, data, 5000));
    CHECK(content_is(f.st, "bkt", key, data2, 10));
    CHECK_EQ_INT(count_all(&f, "objs"), 3);

    /* Delete removes the row and the file. */
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), 0);
    snprintf(oldpath, sizeof(oldpath), "%s", m.path ? m.path : "");
    hd_obj_meta_cleanup(&m);
    CHECK_EQ_INT(hd_store_delete(f.st, "bkt", key), 0);
    CHECK(stat(oldpath, &sb) < 0 && errno == ENOENT);
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), HD_ENOSUCHKEY);
    CHECK(m.path == NULL && m.ctype == NULL);
    fd = -1;
    CHECK_EQ_INT(hd_store_open_object(f.st, "bkt", key, &m, &fd), HD_ENOSUCHKEY);
    CHECK_EQ_INT(hd_store_delete(f.st, "bkt", key), HD_ENOSUCHKEY);
    CHECK_EQ_INT(hd_store_delete(f.st, "bkt", "never-was"), HD_ENOSUCHKEY);
    CHECK(content_is(f.st, "bkt2", key, data, 5000));
    CHECK_EQ_INT(count_all(&f, "objs"), 2);

    /* A put freed without commit leaves no temp file and no row. */
    CHECK_EQ_INT(hd_put_begin(f.st, "bkt", "aborted", &p), 0);
    if (p) {
        CHECK_EQ_INT(hd_put_write(p, data, 300 * 1024), 0); /* more than the write buffer */
        CHECK_EQ_INT(count_all(&f, "tmp"), 1);
        hd_put_free(p);
        p = NULL;
    }
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    CHECK_EQ_INT(count_all(&f, "objs"), 2);
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", "aborted", &m), HD_ENOSUCHKEY);
    CHECK_EQ_INT(hd_put_begin(f.st, "bkt", "aborted", &p), 0); /* nothing written at all */
    hd_put_free(p);
    p = NULL;
    hd_put_free(NULL);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);

    /* An aborted overwrite leaves the old object intact. */
    CHECK_EQ_INT(hd_put_begin(f.st, "bkt", "empty", &p), 0);
    if (p) {
        CHECK_EQ_INT(hd_put_write(p, data, 4096), 0);
        hd_put_free(p);
        p = NULL;
    }
    CHECK(content_is(f.st, "bkt", "empty", "", 0));
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    CHECK_EQ_INT(count_all(&f, "objs"), 2);

    /* Everything survives close/reopen. */
    CHECK_EQ_INT(fx_reopen(&f), 0);
    if (!f.st)
        goto out;
    CHECK(content_is(f.st, "bkt2", key, data, 5000));
    CHECK(content_is(f.st, "bkt", "empty", "", 0));
    CHECK_EQ_INT(hd_store_lookup(f.st, "bkt", key, &m), HD_ENOSUCHKEY);
out:
    fx_close(&f);
    free(data);
    free(data2);
}

HD_SUITE(store_objects)
{
    objects_on(1, 0);
    objects_on(2, 0);
    objects_on(3, 0);
    objects_on(2, 1);
}

/* ---- concurrent overwrites and reads ---- */

struct worker {
    struct hd_store *st;
    int id;
    int errors;
};

static void *overwrite_worker(void *arg)
{
    struct worker *w = arg;
    char key[16], body[64], hex[33];
    int i;

    for (i = 0; i < 60; i++) {
        struct hd_obj_meta m;
        int fd = -1, rc;
        snprintf(key, sizeof(key), "hot%d", i % 5);
        snprintf(body, sizeof(body), "writer %d iteration %d %.*s", w->id, i, i % 20,
                 "xxxxxxxxxxxxxxxxxxxx");
        if (put_str(w->st, "c", key, body) != 0)
            w->errors++;
        /* every version read back is whole and matches the ETag it was listed with */
        rc = hd_store_open_object(w->st, "c", key, &m, &fd);
        if (rc == 0) {
            size_t n = 0;
            char *b = read_fd(fd, &n);
            if (b)
                md5hex(b, n, hex);
            if (!b || n != m.size || strcmp(hex, m.etag) != 0)
                w->errors++;
            free(b);
            hd_obj_meta_cleanup(&m);
        } else {
            w->errors++;
        }
    }
    return NULL;
}

HD_SUITE(store_concurrency)
{
    struct worker w[4];
    pthread_t th[4];
    struct fx f;
    int i, errors = 0;

    CHECK_EQ_INT(fx_open(&f, 3, 0), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "c", "ais"), 0);
    for (i = 0; i < 4; i++) {
        w[i].st = f.st;
        w[i].id = i;
        w[i].errors = 0;
        CHECK_EQ_INT(pthread_create(&th[i], NULL, overwrite_worker, &w[i]), 0);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        errors += w[i].errors;
    }
    CHECK_EQ_INT(errors, 0);
    /* one content file per key survives, nothing left in tmp/ */
    CHECK_EQ_INT(count_all(&f, "objs"), 5);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    {
        struct hd_list_opts o = {NULL, NULL, NULL, 100};
        struct hd_list_res r;
        CHECK_EQ_INT(hd_store_list(f.st, "c", &o, &r), 0);
        CHECK_EQ_INT(r.nents, 5);
        hd_list_res_cleanup(&r);
    }
out:
    fx_close(&f);
}

/* ---- metadata-only updates (object tags) ---- */

static int edit_set(const char *hdrs, char **out, void *arg)
{
    *out = arg ? strdup(arg) : NULL;
    return arg && !*out ? -ENOMEM : 0;
}

static int edit_fail(const char *hdrs, char **out, void *arg)
{
    *out = NULL;
    return HD_EBADARG;
}

static int edit_seen(const char *hdrs, char **out, void *arg)
{
    *(char **)arg = hdrs ? strdup(hdrs) : NULL;
    *out = hdrs ? strdup(hdrs) : NULL;
    return 0;
}

HD_SUITE(store_update_hdrs)
{
    struct hd_put_attrs at = {.hdrs = "{\"cache-control\":\"x\"}"};
    struct hd_obj_meta m0, m1;
    char *seen = NULL;
    struct fx f;
    size_t nmp;

    for (nmp = 1; nmp <= 3; nmp += 2) {
        CHECK_EQ_INT(fx_open(&f, nmp, 0), 0);
        if (!f.st)
            goto out;
        CHECK_EQ_INT(hd_store_bucket_create(f.st, "u", "ais"), 0);
        CHECK_EQ_INT(put_obj(f.st, "u", "k", "content", 7, &at, NULL), 0);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m0), 0); /* cached now */
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_set, "{\"tags\":{\"a\":\"1\"}}"), 0);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m1), 0);
        /* the row cache was dropped: the new hdrs; content, ETag, mtime, file unchanged */
        CHECK_EQ_STR(m1.hdrs, "{\"tags\":{\"a\":\"1\"}}");
        CHECK_EQ_STR(m1.etag, m0.etag);
        CHECK_EQ_INT(m1.mtime_ms, m0.mtime_ms);
        CHECK_EQ_STR(m1.path, m0.path);
        CHECK(content_is(f.st, "u", "k", "content", 7));
        hd_obj_meta_cleanup(&m1);
        /* the edit sees the row's current hdrs; NULL clears them */
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_seen, &seen), 0);
        CHECK_EQ_STR(seen, "{\"tags\":{\"a\":\"1\"}}");
        free(seen);
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_set, NULL), 0);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m1), 0);
        CHECK(m1.hdrs == NULL);
        hd_obj_meta_cleanup(&m1);
        /* a failing edit changes nothing */
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_set, "{\"v\":\"1\"}"), 0);
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_fail, NULL), HD_EBADARG);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m1), 0);
        CHECK_EQ_STR(m1.hdrs, "{\"v\":\"1\"}");
        hd_obj_meta_cleanup(&m1);
        /* no object: nothing is created */
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "none", edit_set, "{}"), HD_ENOSUCHKEY);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "none", &m1), HD_ENOSUCHKEY);
        /* an overwrite replaces the hdrs whole (a PUT without tags drops them) */
        CHECK_EQ_INT(put_obj(f.st, "u", "k", "new", 3, NULL, NULL), 0);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m1), 0);
        CHECK(m1.hdrs == NULL);
        hd_obj_meta_cleanup(&m1);
        /* deleted: the update does not bring it back */
        CHECK_EQ_INT(hd_store_delete(f.st, "u", "k"), 0);
        CHECK_EQ_INT(hd_store_update_hdrs(f.st, "u", "k", edit_set, "{}"), HD_ENOSUCHKEY);
        CHECK_EQ_INT(hd_store_lookup(f.st, "u", "k", &m1), HD_ENOSUCHKEY);
        hd_obj_meta_cleanup(&m0);
    out:
        fx_close(&f);
    }
}

/* Tag updates racing overwrites and deletes of the same name: every call succeeds or finds
 * no object, and what is left is one consistent object (or none), no stray file. */
struct race {
    struct hd_store *st;
    int kind; /* 0 overwrite, 1 tag, 2 delete */
    int errors;
};

static void *race_worker(void *arg)
{
    struct race *w = arg;
    int i, rc;

    for (i = 0; i < 150; i++) {
        if (w->kind == 0)
            rc = put_str(w->st, "r", "k", "racing content");
        else if (w->kind == 1)
            rc = hd_store_update_hdrs(w->st, "r", "k", edit_set, "{\"tags\":{\"t\":\"1\"}}");
        else
            rc = hd_store_delete(w->st, "r", "k");
        if (rc < 0 && rc != HD_ENOSUCHKEY)
            w->errors++;
    }
    return NULL;
}

HD_SUITE(store_update_hdrs_race)
{
    struct race w[3];
    pthread_t th[3];
    struct hd_obj_meta m;
    struct fx f;
    int i, rc;

    CHECK_EQ_INT(fx_open(&f, 3, 0), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "r", "ais"), 0);
    for (i = 0; i < 3; i++) {
        w[i].st = f.st;
        w[i].kind = i;
        w[i].errors = 0;
        CHECK_EQ_INT(pthread_create(&th[i], NULL, race_worker, &w[i]), 0);
    }
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(w[i].errors, 0);
    }
    rc = hd_store_lookup(f.st, "r", "k", &m);
    CHECK(rc == 0 || rc == HD_ENOSUCHKEY);
    CHECK_EQ_INT(count_all(&f, "objs"), rc == 0 ? 1 : 0);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    if (rc == 0) {
        CHECK(content_is(f.st, "r", "k", "racing content", 14));
        CHECK(!m.hdrs || strcmp(m.hdrs, "{\"tags\":{\"t\":\"1\"}}") == 0);
        hd_obj_meta_cleanup(&m);
    }
    /* after a final delete, no update brings the object back */
    hd_store_delete(f.st, "r", "k");
    CHECK_EQ_INT(hd_store_update_hdrs(f.st, "r", "k", edit_set, "{}"), HD_ENOSUCHKEY);
    CHECK_EQ_INT(count_all(&f, "objs"), 0);
out:
    fx_close(&f);
}

/* ---- crash recovery and open errors ---- */

HD_SUITE(store_recovery)
{
    struct hd_put *p = NULL;
    struct fx f;
    char path[PATH_MAX + 32];
    size_t i;
    int fd;

    CHECK_EQ_INT(fx_open(&f, 2, 0), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "b", "ais"), 0);
    CHECK_EQ_INT(put_str(f.st, "b", "survivor", "still here"), 0);

    /* A PUT in flight when the process "dies": its temp file stays in MP/tmp. */
    CHECK_EQ_INT(hd_put_begin(f.st, "b", "in-flight", &p), 0);
    if (p)
        CHECK_EQ_INT(hd_put_write(p, "partial", 7), 0);
    /* ... plus leftovers from an earlier crash on every mountpath */
    for (i = 0; i < f.nmp; i++) {
        snprintf(path, sizeof(path), "%s/tmp/0123456789abcdef0123456789abcde%zu", f.real[i], i);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        CHECK(fd >= 0);
        if (fd >= 0) {
            CHECK(write(fd, "junk", 4) == 4);
            close(fd);
        }
    }
    CHECK_EQ_INT(count_all(&f, "tmp"), f.nmp + 1);
    CHECK_EQ_INT(fx_reopen(&f), 0);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    hd_put_free(p); /* the "dead" writer's handle; its file is already gone */
    if (!f.st)
        goto out;
    CHECK(content_is(f.st, "b", "survivor", "still here", 10));
    {
        struct hd_obj_meta m;
        CHECK_EQ_INT(hd_store_lookup(f.st, "b", "in-flight", &m), HD_ENOSUCHKEY);
    }
    CHECK_EQ_INT(count_all(&f, "objs"), 1);
out:
    fx_close(&f);

    /* Bad configurations are errors, not crashes. */
    {
        struct hd_store *st = NULL;
        const char *mps[1] = {"/dev/null/mp"};
        struct hd_store_cfg cfg = {.data_dir = "/tmp", .mountpaths = mps};
        CHECK_EQ_INT(hd_store_open(&cfg, &st), -EINVAL);
        cfg.nmp = 1;
        cfg.data_dir = "/dev/null/data";
        CHECK(hd_store_open(&cfg, &st) < 0);
    }
}

/* ---- placement ---- */

static void placement_on(size_t nmp)
{
    size_t per[3] = {0, 0, 0}, i;
    struct hd_obj_meta m;
    struct fx f;
    char key[64];
    int bad = 0;

    CHECK_EQ_INT(fx_open(&f, nmp, 0), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "spread", "ais"), 0);
    for (i = 0; i < 300; i++) {
        int want;
        snprintf(key, sizeof(key), "k%03zu/obj-%zu.bin", i, i * 7919);
        want = expect_mp(&f, "spread", key);
        CHECK(want >= 0 && want < (int)nmp);
        if (want < 0)
            continue;
        per[want]++;
        if (put_str(f.st, "spread", key, key) != 0) {
            bad++;
            continue;
        }
        if (hd_store_lookup(f.st, "spread", key, &m) != 0 ||
            !path_on_mp(&f, (size_t)want, m.path)) {
            if (bad++ < 5)
                fprintf(stderr, "  %s: on %s, HRW says mountpath %d (%s)\n", key,
                        m.path ? m.path : "?", want, f.real[want]);
        }
        hd_obj_meta_cleanup(&m);
    }
    CHECK_EQ_INT(bad, 0);
    for (i = 0; i < nmp; i++) {
        CHECK(per[i] > 0);
        CHECK_EQ_INT(count_mp(&f, i, "objs"), per[i]);
    }
    /* Placement is stable across reopen: everything is found again. */
    CHECK_EQ_INT(fx_reopen(&f), 0);
    if (!f.st)
        goto out;
    bad = 0;
    for (i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "k%03zu/obj-%zu.bin", i, i * 7919);
        if (!content_is(f.st, "spread", key, key, strlen(key)))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
out:
    fx_close(&f);
}

HD_SUITE(store_placement)
{
    placement_on(2);
    placement_on(3);
}

/* ---- listing against a brute-force reference ---- */

struct key {
    char *name;
    size_t len;
    char etag[33];
};

static int key_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);

    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = memcmp(a, b, n);

    return c ? c : (al > bl) - (al < bl);
}

static int has_prefix(const char *s, size_t n, const char *p, size_t pn)
{
    return n >= pn && memcmp(s, p, pn) == 0;
}

/* Length of k's common prefix (through the first delimiter after the prefix), or 0. */
static size_t cp_len(const char *k, size_t kl, size_t plen, const char *d, size_t dl)
{
    const char *h;

    if (!dl || kl < plen)
        return 0;
    h = memmem(k + plen, kl - plen, d, dl);
    return h ? (size_t)(h - k) + dl : 0;
}

struct item {
    const char *name; /* not NUL-terminated */
    size_t len;
    int is_prefix;
};

/* S3 semantics, naively: keys under prefix and after start_after, folded into common
 * prefixes; when start_after is itself a common prefix, everything under it is skipped.
 * Fills items (sized nkeys) with the whole result; returns its length. */
static size_t ref_list(const struct key *keys, size_t nkeys, const char *prefix, const char *delim,
                       const char *sa, struct item *items)
{
    size_t plen = prefix ? strlen(prefix) : 0, dl = delim ? strlen(delim) : 0;
    size_t sl = sa ? strlen(sa) : 0, n = 0, i;
    int sa_is_cp = sa && dl && has_prefix(sa, sl, prefix ? prefix : "", plen) && sl > 0 &&
                   cp_len(sa, sl, plen, delim, dl) == sl;

    for (i = 0; i < nkeys; i++) {
        const struct key *k = &keys[i];
        size_t cl;
        if (!has_prefix(k->name, k->len, prefix ? prefix : "", plen))
            continue;
        if (sa && bytes_cmp(k->name, k->len, sa, sl) <= 0)
            continue;
        if (sa_is_cp && has_prefix(k->name, k->len, sa, sl))
            continue;
        cl = cp_len(k->name, k->len, plen, delim, dl);
        if (cl) {
            if (n && items[n - 1].is_prefix && items[n - 1].len == cl &&
                memcmp(items[n - 1].name, k->name, cl) == 0)
                continue;
            items[n].name = k->name;
            items[n].len = cl;
            items[n].is_prefix = 1;
        } else {
            items[n].name = k->name;
            items[n].len = k->len;
            items[n].is_prefix = 0;
        }
        n++;
    }
    return n;
}

static const struct key *find_key(const struct key *keys, size_t n, const char *name)
{
    struct key probe = {(char *)name, strlen(name), ""};

    return bsearch(&probe, keys, n, sizeof(*keys), key_cmp);
}

static int list_failures;

static void describe(const char *what, const char *prefix, const char *delim, const char *sa,
                     size_t max)
{
    if (list_failures++ < 15)
        fprintf(stderr,
                "  list mismatch (%s): prefix=%s%s%s delim=%s%s%s start_after=%s%s%s "
                "max=%zu\n",
                what, prefix ? "\"" : "", prefix ? prefix : "NULL", prefix ? "\"" : "",
                delim ? "\"" : "", delim ? delim : "NULL", delim ? "\"" : "", sa ? "\"" : "",
                sa ? sa : "NULL", sa ? "\"" : "", max);
}

/* One hd_store_list call checked against the reference; returns 1 if it matched. */
static int check_page(struct hd_store *st, const char *bucket, const struct key *keys, size_t nkeys,
                      struct item *items, const char *prefix, const char *delim, const char *sa,
                      size_t max)
{
    struct hd_list_opts o = {prefix, delim, sa, max};
    struct hd_list_res r;
    size_t total = ref_list(keys, nkeys, prefix, delim, sa, items);
    size_t page = total < max ? total : max, i, e = 0, p = 0;
    int rc = hd_store_list(st, bucket, &o, &r), ok = 1;

    if (rc != 0) {
        describe("rc", prefix, delim, sa, max);
        return 0;
    }
    if (r.nents + r.nprefixes != page)
        ok = 0;
    if (!!r.truncated != (total > max))
        ok = 0;
    for (i = 0; ok && i < page; i++) {
        const struct item *it = &items[i];
        if (it->is_prefix) {
            if (p >= r.nprefixes || strlen(r.prefixes[p]) != it->len ||
                memcmp(r.prefixes[p], it->name, it->len) != 0)
                ok = 0;
            p++;
        } else {
            const struct key *k;
            if (e >= r.nents || strlen(r.ents[e].name) != it->len ||
                memcmp(r.ents[e].name, it->name, it->len) != 0) {
                ok = 0;
                break;
            }
            k = find_key(keys, nkeys, r.ents[e].name);
            if (!k || r.ents[e].size != k->len || strcmp(r.ents[e].etag, k->etag) != 0 ||
                r.ents[e].mtime_ms <= 0)
                ok = 0;
            e++;
        }
    }
    if (ok) {
        if (page == 0)
            ok = r.last == NULL;
        else
            ok = r.last && strlen(r.last) == items[page - 1].len &&
                 memcmp(r.last, items[page - 1].name, items[page - 1].len) == 0;
        if (!ok)
            describe("last", prefix, delim, sa, max);
    } else {
        describe(r.nents + r.nprefixes != page ? "count" : "content", prefix, delim, sa, max);
        if (list_failures <= 15)
            fprintf(stderr,
                    "    want %zu of %zu (truncated %d), got %zu keys + %zu prefixes "
                    "(truncated %d)%s%.*s\n",
                    page, total, total > max, r.nents, r.nprefixes, r.truncated,
                    page ? ", first want " : "", page ? (int)items[0].len : 0,
                    page ? items[0].name : "");
    }
    hd_list_res_cleanup(&r);
    return ok;
}

/* Pages through the whole listing feeding res.last back as start_after; the concatenation
 * must equal the reference exactly (every key/prefix once, in order). */
static int check_paging(struct hd_store *st, const char *bucket, const struct key *keys,
                        size_t nkeys, struct item *items, const char *prefix, const char *delim,
                        size_t max)
{
    size_t total = ref_list(keys, nkeys, prefix, delim, NULL, items), got = 0, iter;
    char *sa = NULL;
    int ok = 1;

    for (iter = 0; iter <= total + 1; iter++) {
        struct hd_list_opts o = {prefix, delim, sa, max};
        struct hd_list_res r;
        size_t e = 0, p = 0;
        if (hd_store_list(st, bucket, &o, &r) != 0) {
            ok = 0;
            break;
        }
        /* merge this page's keys and prefixes in order and match them against the ref */
        while (ok && (e < r.nents || p < r.nprefixes)) {
            const char *nm;
            int isp;
            if (e < r.nents && (p >= r.nprefixes || strcmp(r.ents[e].name, r.prefixes[p]) < 0)) {
                nm = r.ents[e++].name;
                isp = 0;
            } else {
                nm = r.prefixes[p++];
                isp = 1;
            }
            if (got >= total || items[got].is_prefix != isp || strlen(nm) != items[got].len ||
                memcmp(nm, items[got].name, items[got].len) != 0)
                ok = 0;
            got++;
        }
        if (r.truncated && r.nents + r.nprefixes == 0)
            ok = 0; /* a truncated empty page would never make progress */
        free(sa);
        sa = r.last ? strdup(r.last) : NULL;
        {
            int more = r.truncated;
            hd_list_res_cleanup(&r);
            if (!ok || !more)
                break;
        }
        if (!sa) {
            ok = 0;
            break;
        }
    }
    free(sa);
    if (got != total)
        ok = 0;
    if (!ok) {
        describe("paging", prefix, delim, NULL, max);
        if (list_failures <= 15)
            fprintf(stderr, "    paged %zu items, want %zu\n", got, total);
    }
    return ok;
}

static int add_key(struct key **keys, size_t *n, size_t *cap, const char *s)
{
    if (*n == *cap) {
        struct key *nk = realloc(*keys, (*cap ? *cap * 2 : 256) * sizeof(**keys));
        if (!nk)
            return -ENOMEM;
        *keys = nk;
        *cap = *cap ? *cap * 2 : 256;
    }
    (*keys)[*n].name = strdup(s);
    if (!(*keys)[*n].name)
        return -ENOMEM;
    (*keys)[*n].len = strlen(s);
    md5hex(s, strlen(s), (*keys)[*n].etag);
    (*n)++;
    return 0;
}

/* ~2000 distinct keys: nested prefixes, keys that are prefixes of others, doubled and
 * overlapping delimiters, unicode, bytes above 0x7f, sorted bytewise. */
static size_t make_keys(struct key **out)
{
    static const char *const fixed[] = {
        "a",
        "a/",
        "a//",
        "a//b",
        "a/b",
        "a/b/",
        "a/b/c",
        "a/b/d",
        "a/b/c/d",
        "a/b/c/",
        "a/x",
        "a/x/",
        "a-",
        "a--",
        "a---",
        "a----",
        "a--b",
        "a---b",
        "a--b--c",
        "a0",
        "b",
        "b/",
        "b/c",
        "ba",
        "-",
        "--",
        "---",
        "--x",
        "/",
        "//",
        "/a",
        "/a/b",
        "x--y--z",
        "x--y--",
        "x--y",
        "x--",
        "x-y--z",
        "x---y",
        "ü",
        "ü/",
        "ü/ß",
        "ü/ß/∂",
        "日本/語/テキスト",
        "日本語",
        "emoji/😀/x",
        "emoji/😀",
        "z\x7f",
        "z\x7f/",
        "~",
        "~/~",
        "a/b/c--d--e",
        "p--q/r--s",
        "a b/c d",
        "a/b%2Fc",
        "A/B",
        "Z",
    };
    struct key *keys = NULL;
    size_t n = 0, cap = 0, i, w;
    char s[128];

    for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        add_key(&keys, &n, &cap, fixed[i]);
    for (i = 0; i < 300; i++) {
        snprintf(s, sizeof(s), "d%zu/e%zu/f%zu", i % 7, i % 5, i);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "p%03zu", i);
        add_key(&keys, &n, &cap, s);
    }
    for (i = 0; i < 200; i++) {
        snprintf(s, sizeof(s), "x--y--%zu", i);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "x--%zu--z", i % 40);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "a/b/%03zu", i);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "deep/%zu/%zu/%zu/%zu", i % 3, i % 4, i % 5, i);
        add_key(&keys, &n, &cap, s);
    }
    for (i = 0; i < 150; i++) {
        snprintf(s, sizeof(s), "ü/%zu/ß", i);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "q-%zu--r/%zu--s", i % 11, i);
        add_key(&keys, &n, &cap, s);
    }
    for (i = 0; i < 300; i++) {
        snprintf(s, sizeof(s), "n%zu--%zu/o", i % 13, i);
        add_key(&keys, &n, &cap, s);
    }
    for (i = 0; i < 100; i++) {
        snprintf(s, sizeof(s), "a/%zu", i);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "a/b%zu", i % 30);
        add_key(&keys, &n, &cap, s);
        snprintf(s, sizeof(s), "a/b%zu/", i % 20);
        add_key(&keys, &n, &cap, s);
    }
    qsort(keys, n, sizeof(*keys), key_cmp);
    for (i = 0, w = 0; i < n; i++) {
        if (w && key_cmp(&keys[w - 1], &keys[i]) == 0) {
            free(keys[i].name);
            continue;
        }
        keys[w++] = keys[i];
    }
    *out = keys;
    return w;
}

static void list_on(size_t nmp, const struct key *keys, size_t nkeys, int full)
{
    static const char *const prefixes[] = {
        NULL, "",    "a",       "a/", "a/b",      "a/b/", "a/b/c", "b",  "x--",   "x--y--",
        "ü/", "d3/", "deep/1/", "p1", "zzz-none", "-",    "/",     "a-", "q-3--r"};
    static const char *const delims[] = {NULL, "", "/", "--", "-"};
    static const size_t maxes[] = {0, 1, 2, 7, 1000};
    static const char *const fixed_sa[] = {
        NULL,  "",       "a",       "a/",   "a/b",     "a/b/",    "a/b/c",   "a--",
        "x--", "x--y--", "x--y--5", "p150", "ü/",      "ü",       "zzzz",    "\xff",
        "d3/", "d3/e1/", "-",       "--",   "a/b/050", "deep/1/", "q-3--r/", "0"};
    struct item *items = malloc((nkeys + 1) * sizeof(*items));
    struct item *full_items = malloc((nkeys + 1) * sizeof(*items));
    size_t pi, di, mi, si, i, runs = 0, good = 0, pruns = 0, pgood = 0;
    struct fx f;
    int bad = 0;

    CHECK(items && full_items);
    CHECK_EQ_INT(fx_open(&f, nmp, 0), 0);
    if (!f.st || !items || !full_items)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "lst", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "lst2", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "ls", "ais"), 0);
    for (i = 0; i < nkeys; i++)
        if (put_obj(f.st, "lst", keys[i].name, keys[i].name, keys[i].len, NULL, NULL) != 0)
            bad++;
    CHECK_EQ_INT(bad, 0);
    /* neighbours in other buckets must never show up */
    CHECK_EQ_INT(put_str(f.st, "lst2", "a/b/other", "o"), 0);
    CHECK_EQ_INT(put_str(f.st, "lst2", "p0005", "o"), 0);
    CHECK_EQ_INT(put_str(f.st, "lst2", "a", "o"), 0);
    CHECK_EQ_INT(put_str(f.st, "ls", "x--y--other", "o"), 0);
    CHECK_EQ_INT(put_str(f.st, "ls", "a/b/c", "o"), 0);

    /* Empty bucket: nothing, not truncated, no marker. */
    {
        struct hd_list_opts o = {NULL, "/", NULL, 1000};
        struct hd_list_res r;
        CHECK_EQ_INT(hd_store_bucket_create(f.st, "empty", "ais"), 0);
        CHECK_EQ_INT(hd_store_list(f.st, "empty", &o, &r), 0);
        CHECK_EQ_INT(r.nents + r.nprefixes, 0);
        CHECK_EQ_INT(r.truncated, 0);
        CHECK(r.last == NULL);
        hd_list_res_cleanup(&r);
    }

    for (pi = 0; pi < sizeof(prefixes) / sizeof(prefixes[0]); pi++) {
        for (di = 0; di < sizeof(delims) / sizeof(delims[0]); di++) {
            const char *pr = prefixes[pi], *dl = delims[di];
            size_t nfull = ref_list(keys, nkeys, pr, dl, NULL, full_items);
            const char *extra[12];
            char *owned[12];
            size_t nextra = 0, nprefix_extra = 0;

            /* start_after values taken from the result itself, common prefixes included */
            for (i = 0; i < nfull && nextra < 12; i++) {
                int pick = i == 0 || i == 1 || i == nfull / 3 || i == nfull / 2 || i == nfull - 1 ||
                           (full_items[i].is_prefix && nprefix_extra < 4);
                if (!pick)
                    continue;
                if (full_items[i].is_prefix)
                    nprefix_extra++;
                owned[nextra] = strndup(full_items[i].name, full_items[i].len);
                extra[nextra] = owned[nextra];
                nextra++;
            }
            for (mi = 0; mi < sizeof(maxes) / sizeof(maxes[0]); mi++) {
                if (!full && maxes[mi] != 7 && maxes[mi] != 1000)
                    continue;
                for (si = 0; si < sizeof(fixed_sa) / sizeof(fixed_sa[0]) + nextra; si++) {
                    const char *sa = si < sizeof(fixed_sa) / sizeof(fixed_sa[0])
                                         ? fixed_sa[si]
                                         : extra[si - sizeof(fixed_sa) / sizeof(fixed_sa[0])];
                    runs++;
                    good +=
                        (size_t)check_page(f.st, "lst", keys, nkeys, items, pr, dl, sa, maxes[mi]);
                }
                if (maxes[mi] > 0) {
                    pruns++;
                    pgood +=
                        (size_t)check_paging(f.st, "lst", keys, nkeys, items, pr, dl, maxes[mi]);
                }
            }
            for (i = 0; i < nextra; i++)
                free(owned[i]);
        }
    }
    if (good != runs || pgood != pruns)
        fprintf(stderr,
                "  %zu mountpath(s): %zu of %zu list calls and %zu of %zu pagings "
                "matched the reference\n",
                nmp, good, runs, pgood, pruns);
    CHECK_EQ_INT(good, runs);
    CHECK_EQ_INT(pgood, pruns);

    /* Deleting keys shows in the next listing. */
    {
        struct hd_list_opts o = {"a/b/", "/", NULL, 1000};
        struct hd_list_res r;
        size_t before;
        CHECK_EQ_INT(hd_store_list(f.st, "lst", &o, &r), 0);
        before = r.nents;
        hd_list_res_cleanup(&r);
        CHECK_EQ_INT(hd_store_delete(f.st, "lst", "a/b/000"), 0);
        CHECK_EQ_INT(hd_store_delete(f.st, "lst", "a/b/c"), 0);
        CHECK_EQ_INT(hd_store_list(f.st, "lst", &o, &r), 0);
        CHECK_EQ_INT(r.nents + 2, before);
        for (i = 0; i < r.nents; i++)
            CHECK(strcmp(r.ents[i].name, "a/b/000") != 0 && strcmp(r.ents[i].name, "a/b/c"));
        hd_list_res_cleanup(&r);
    }
out:
    fx_close(&f);
    free(items);
    free(full_items);
}

HD_SUITE(store_list)
{
    struct key *keys = NULL;
    size_t n = make_keys(&keys), i;

    if (n < 1900 || n > 2500)
        fprintf(stderr, "  %zu keys\n", n);
    CHECK(n > 1900 && n < 2500);
    list_failures = 0;
    list_on(3, keys, n, 1);
    list_on(1, keys, n, 0);
    for (i = 0; i < n; i++)
        free(keys[i].name);
    free(keys);
}

/* ---- the row cache (store_mcache.c) ---- */

HD_SUITE(store_mcache)
{
    struct hd_mcache *mc = NULL;
    struct hd_obj_meta m, got;
    char *rel = NULL, key[32];
    size_t mpi = 9, i;
    uint64_t gen;

    CHECK_EQ_INT(hd_mcache_new(0, 0, &mc), 0);
    CHECK(mc == NULL); /* off */
    CHECK_EQ_INT(hd_mcache_get(NULL, "b", "k", &got, &mpi, &rel, NULL), HD_ENOSUCHKEY);
    CHECK_EQ_INT(hd_mcache_new(640, 0, &mc), 0);
    CHECK(mc != NULL);
    memset(&m, 0, sizeof(m));
    m.size = 7;
    m.mtime_ms = 1234;
    snprintf(m.etag, sizeof(m.etag), "etag1");
    m.ctype = "text/plain";
    gen = hd_mcache_gen(mc, "b", "k");
    hd_mcache_put(mc, "b", "k", 1, &m, "objs/aa/bb/f1", gen);
    CHECK_EQ_INT(hd_mcache_get(mc, "b", "k", &got, &mpi, &rel, NULL), 0);
    CHECK_EQ_INT(got.size, 7);
    CHECK_EQ_STR(got.etag, "etag1");
    CHECK_EQ_STR(got.ctype, "text/plain");
    CHECK(got.meta == NULL);
    CHECK_EQ_STR(rel, "objs/aa/bb/f1");
    CHECK_EQ_INT(mpi, 1);
    hd_obj_meta_cleanup(&got);
    free(rel);
    /* "b" + "\0k" and "b\0" + "k" style ambiguity: bucket and name stay apart */
    CHECK_EQ_INT(hd_mcache_get(mc, "bk", "", &got, &mpi, &rel, NULL), HD_ENOSUCHKEY);
    /* a reader that read its row before a writer's drop does not cache it afterwards */
    gen = hd_mcache_gen(mc, "b", "k2");
    hd_mcache_drop(mc, "b", "k2"); /* the writer committed and dropped meanwhile */
    hd_mcache_put(mc, "b", "k2", 0, &m, "objs/old", gen);
    CHECK_EQ_INT(hd_mcache_get(mc, "b", "k2", &got, &mpi, &rel, NULL), HD_ENOSUCHKEY);
    /* a drop removes; drop_all removes everything */
    hd_mcache_drop(mc, "b", "k");
    CHECK_EQ_INT(hd_mcache_get(mc, "b", "k", &got, &mpi, &rel, NULL), HD_ENOSUCHKEY);
    for (i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "key-%zu", i);
        hd_mcache_put(mc, "b", key, 0, &m, "objs/x", hd_mcache_gen(mc, "b", key));
    }
    CHECK(hd_mcache_count(mc) <= 640 + 64); /* bounded: each stripe forgets its LRU rows */
    CHECK(hd_mcache_count(mc) >= 320);
    CHECK_EQ_INT(hd_mcache_get(mc, "b", "key-4999", &got, &mpi, &rel, NULL), 0); /* recent: kept */
    hd_obj_meta_cleanup(&got);
    free(rel);
    hd_mcache_drop_all(mc);
    CHECK_EQ_INT(hd_mcache_count(mc), 0);
    hd_mcache_free(mc);
}

/* What a GET reads through the shared descriptors: pread only, and always the current
 * version, through overwrites, deletes and bucket destruction. */
static int shared_is(struct hd_store *st, const char *bucket, const char *key, const char *want)
{
    struct hd_obj_meta m;
    char buf[64] = "";
    int fd = -1, ok;
    ssize_t n;

    if (hd_store_open_object_shared(st, bucket, key, &m, &fd) != 0)
        return 0;
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    ok = n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0 && m.size == strlen(want);
    close(fd);
    hd_obj_meta_cleanup(&m);
    return ok;
}

HD_SUITE(store_shared_fds)
{
    struct hd_obj_meta m;
    struct fx fx;
    int i, fd = -1;

    if (fx_open(&fx, 2, 0) < 0) {
        CHECK(!"fixture");
        return;
    }
    CHECK_EQ_INT(hd_store_bucket_create(fx.st, "sh", "ais"), 0);
    CHECK_EQ_INT(put_str(fx.st, "sh", "k", "first"), 0);
    for (i = 0; i < 3; i++) /* the first open fills the cache, later ones duplicate */
        CHECK(shared_is(fx.st, "sh", "k", "first"));
    CHECK_EQ_INT(put_str(fx.st, "sh", "k", "second!"), 0);
    for (i = 0; i < 3; i++)
        CHECK(shared_is(fx.st, "sh", "k", "second!"));
    /* a private description (sequential read()) is unaffected by the shared one */
    CHECK(content_is(fx.st, "sh", "k", "second!", 7));
    CHECK(shared_is(fx.st, "sh", "k", "second!"));
    CHECK_EQ_INT(hd_store_delete(fx.st, "sh", "k"), 0);
    CHECK_EQ_INT(hd_store_open_object_shared(fx.st, "sh", "k", &m, &fd), HD_ENOSUCHKEY);
    CHECK_EQ_INT(put_str(fx.st, "sh", "k2", "kept"), 0);
    CHECK(shared_is(fx.st, "sh", "k2", "kept"));
    CHECK_EQ_INT(hd_store_bucket_destroy(fx.st, "sh"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(fx.st, "sh", "ais"), 0);
    CHECK_EQ_INT(hd_store_open_object_shared(fx.st, "sh", "k2", &m, &fd), HD_ENOSUCHKEY);
    fx_close(&fx);
}

/* ---- stored headers and part sizes, conditional commits, catalogs from before them ---- */

static int put_attrs(struct hd_store *st, const char *bucket, const char *key, const char *body,
                     const struct hd_put_attrs *a)
{
    struct hd_put *p;
    int rc = hd_put_begin(st, bucket, key, &p);

    if (rc < 0)
        return rc;
    if ((rc = hd_put_write(p, body, strlen(body))) == 0)
        rc = hd_put_commit(p, a, NULL);
    hd_put_free(p);
    return rc;
}

HD_SUITE(store_attrs_and_conditions)
{
    struct fx f;
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    struct hd_list_opts o = {.max = 10};
    struct hd_list_res res;
    struct hd_put *p1, *p2;

    if (fx_open(&f, 2, 0) < 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "b", "ais"), 0);
    memset(&a, 0, sizeof(a));
    a.hdrs = "{\"cache-control\":\"no-cache\",\"x-amz-storage-class\":\"GLACIER\"}";
    a.parts = "[5,2]";
    CHECK_EQ_INT(put_attrs(f.st, "b", "k", "abcdefg", &a), 0);
    /* read twice: from the catalog, then from the row cache */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(hd_store_lookup(f.st, "b", "k", &m), 0);
        CHECK_EQ_STR(m.hdrs ? m.hdrs : "", a.hdrs);
        CHECK_EQ_STR(m.parts ? m.parts : "", "[5,2]");
        hd_obj_meta_cleanup(&m);
    }
    CHECK_EQ_INT(put_str(f.st, "b", "plain", "x"), 0);
    CHECK_EQ_INT(hd_store_list(f.st, "b", &o, &res), 0);
    CHECK_EQ_INT(res.nents, 2);
    if (res.nents == 2) {
        CHECK_EQ_STR(res.ents[0].sclass, "GLACIER");
        CHECK_EQ_STR(res.ents[1].sclass, "");
    }
    hd_list_res_cleanup(&res);

    /* create-only: two writers began before either committed; the second loses at commit */
    memset(&a, 0, sizeof(a));
    a.if_none_match = 1;
    CHECK_EQ_INT(hd_put_begin(f.st, "b", "new", &p1), 0);
    CHECK_EQ_INT(hd_put_begin(f.st, "b", "new", &p2), 0);
    CHECK_EQ_INT(hd_put_write(p1, "one", 3), 0);
    CHECK_EQ_INT(hd_put_write(p2, "two", 3), 0);
    CHECK_EQ_INT(hd_put_commit(p1, &a, NULL), 0);
    CHECK_EQ_INT(hd_put_commit(p2, &a, NULL), HD_ECONFLICT);
    hd_put_free(p1);
    hd_put_free(p2);
    CHECK_EQ_INT(hd_store_lookup(f.st, "b", "new", &m), 0);
    CHECK_EQ_INT(m.size, 3);
    /* If-Match: the ETag held at commit, or "*" for any */
    memset(&a, 0, sizeof(a));
    a.if_match = "\"00000000000000000000000000000000\"";
    CHECK_EQ_INT(put_attrs(f.st, "b", "new", "three", &a), HD_ECONFLICT);
    a.if_match = m.etag;
    CHECK_EQ_INT(put_attrs(f.st, "b", "new", "three", &a), 0);
    a.if_match = "*";
    CHECK_EQ_INT(put_attrs(f.st, "b", "new", "four", &a), 0);
    CHECK_EQ_INT(put_attrs(f.st, "b", "missing", "four", &a), HD_ECONFLICT);
    hd_obj_meta_cleanup(&m);
    CHECK_EQ_INT(hd_store_lookup(f.st, "b", "missing", &m), HD_ENOSUCHKEY);
    /* a refused commit leaves no file behind: 3 objects, nothing in tmp/ */
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    fx_close(&f);
}

/* A catalog written before the hdrs and parts columns existed gets them at open. */
HD_SUITE(store_migration)
{
    struct fx f;
    struct hd_obj_meta m;
    struct hd_put_attrs a;
    char path[PATH_MAX + 32];
    sqlite3 *db;

    if (fx_open(&f, 1, 0) < 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "b", "ais"), 0);
    CHECK_EQ_INT(put_str(f.st, "b", "old", "before"), 0);
    hd_store_close(f.st);
    f.st = NULL;
    /* rebuild the table as the old schema had it */
    snprintf(path, sizeof(path), "%s/catalog.db", f.real[0]);
    CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(db,
                              "CREATE TABLE o2(bucket TEXT NOT NULL, name TEXT NOT NULL, size "
                              "INTEGER NOT NULL, etag TEXT NOT NULL, cksum_type TEXT, cksum TEXT, "
                              "mtime INTEGER NOT NULL, atime INTEGER NOT NULL, ctype TEXT, meta "
                              "TEXT, file TEXT NOT NULL, PRIMARY KEY(bucket, name)) WITHOUT ROWID;"
                              "INSERT INTO o2 SELECT bucket, name, size, etag, cksum_type, cksum, "
                              "mtime, atime, ctype, meta, file FROM objects;"
                              "DROP TABLE objects; ALTER TABLE o2 RENAME TO objects;",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    CHECK_EQ_INT(fx_start(&f), 0);
    CHECK_EQ_INT(hd_store_lookup(f.st, "b", "old", &m), 0);
    CHECK(m.hdrs == NULL && m.parts == NULL);
    CHECK_EQ_INT(m.size, 6);
    hd_obj_meta_cleanup(&m);
    memset(&a, 0, sizeof(a));
    a.hdrs = "{\"expires\":\"never\"}";
    CHECK_EQ_INT(put_attrs(f.st, "b", "new", "after", &a), 0);
    CHECK_EQ_INT(hd_store_lookup(f.st, "b", "new", &m), 0);
    CHECK_EQ_STR(m.hdrs ? m.hdrs : "", "{\"expires\":\"never\"}");
    hd_obj_meta_cleanup(&m);
    fx_close(&f);
}

/* hd_store_mp_bucket_usage (GET /v1/buckets/B?summary): one bucket's rows per mountpath, other
 * buckets not counted, overwrites and deletes followed. */
HD_SUITE(store_bucket_usage)
{
    uint64_t o, b, objs = 0, bytes = 0;
    struct fx f;
    size_t i;
    char name[32];

    if (fx_open(&f, 3, 0) < 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "u1", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "u2", "ais"), 0);
    for (i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "obj-%02zu", i);
        CHECK_EQ_INT(put_str(f.st, "u1", name, i % 2 ? "odd" : "even!"), 0);
    }
    CHECK_EQ_INT(put_str(f.st, "u2", "other", "not counted in u1"), 0);
    CHECK_EQ_INT(put_str(f.st, "u1", "obj-00", "longer than before"), 0); /* overwrite */
    CHECK_EQ_INT(hd_store_delete(f.st, "u1", "obj-01"), 0);
    for (i = 0; i < hd_store_nmp(f.st); i++) {
        CHECK_EQ_INT(hd_store_mp_bucket_usage(f.st, i, "u1", &o, &b), 0);
        objs += o;
        bytes += b;
    }
    CHECK_EQ_INT(objs, 29);
    CHECK_EQ_INT(bytes, 14 * 5 + 14 * 3 + 18); /* 14 even + 14 odd left, obj-00 rewritten */
    CHECK_EQ_INT(hd_store_mp_bucket_usage(f.st, 0, "nosuch", &o, &b), 0);
    CHECK_EQ_INT(o + b, 0);
    CHECK_EQ_INT(hd_store_mp_bucket_usage(f.st, 3, "u1", &o, &b), HD_EBADARG);
    fx_close(&f);
}

/* ---- the PUT pipeline (issue 14): MD5 on the hash pool, group commit ---- */

/* A put announced large hashes on the hash pool: the ETag is still the MD5 of every byte,
 * whatever the chunking, with flushes (cold GET readers) and an early hd_put_md5 (Content-MD5
 * check) in between; an abandoned one leaves nothing behind. */
HD_SUITE(store_hash_pipe)
{
    static const size_t chunks[] = {1, 4095, 65536, 300000, 7, 131072, 262144, 262143};
    const size_t len = 5u * 1024 * 1024 + 12345;
    unsigned char *data = pattern(len, 7), md5[16];
    char want[33], got[33];
    struct hd_obj_meta m;
    struct hd_put *p = NULL;
    struct fx f;
    size_t off = 0, c = 0;

    CHECK_EQ_INT(fx_open(&f, 2, 1), 0);
    if (!f.st || !data)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "h", "ais"), 0);
    md5hex(data, len, want);
    CHECK_EQ_INT(hd_put_begin_sized(f.st, "h", "big", len, &p), 0);
    if (!p)
        goto out;
    CHECK(p->hp != NULL);
    while (off < len) {
        size_t k = chunks[c++ % (sizeof(chunks) / sizeof(chunks[0]))];
        if (k > len - off)
            k = len - off;
        CHECK_EQ_INT(hd_put_write(p, data + off, k), 0);
        off += k;
        if (c % 5 == 0)
            CHECK_EQ_INT(hd_put_flush(p), 0);
    }
    CHECK_EQ_INT(hd_put_flushed(p) <= len, 1);
    hd_put_md5(p, md5);
    for (int i = 0; i < 16; i++)
        snprintf(got + 2 * i, 3, "%02x", md5[i]);
    CHECK_EQ_STR(got, want);
    CHECK_EQ_INT(hd_put_commit(p, NULL, &m), 0);
    CHECK_EQ_STR(m.etag, want);
    hd_put_free(p);
    CHECK(content_is(f.st, "h", "big", data, len));

    /* abandoned half way: no temp file, no row */
    p = NULL;
    CHECK_EQ_INT(hd_put_begin_sized(f.st, "h", "gone", len, &p), 0);
    if (p) {
        for (off = 0; off < len / 2; off += 65536)
            CHECK_EQ_INT(hd_put_write(p, data + off, 65536), 0);
        hd_put_free(p);
    }
    CHECK_EQ_INT(hd_store_lookup(f.st, "h", "gone", &m), HD_ENOSUCHKEY);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    CHECK_EQ_INT(count_all(&f, "objs"), 1);

    /* a put that skips its MD5 (a cached object with the upstream's ETag) drops the pipe */
    p = NULL;
    CHECK_EQ_INT(hd_put_begin_sized(f.st, "h", "etag", len, &p), 0);
    if (p) {
        struct hd_put_attrs a = {.etag = "upstream-etag-1"};
        hd_put_skip_md5(p);
        CHECK(p->hp == NULL);
        CHECK_EQ_INT(hd_put_write(p, data, len), 0);
        CHECK_EQ_INT(hd_put_commit(p, &a, &m), 0);
        CHECK_EQ_STR(m.etag, "upstream-etag-1");
        hd_put_free(p);
    }
out:
    free(data);
    fx_close(&f);
}

struct gc_worker {
    struct hd_store *st;
    int id, errors, won;
};

/* Commits race on one mountpath, so rows are committed in groups: each worker writes keys of
 * its own plus one If-None-Match: * key per round that every worker also tries. */
static void *gc_worker_main(void *arg)
{
    struct gc_worker *w = arg;
    char key[32], body[64];

    for (int i = 0; i < 25; i++) {
        struct hd_put_attrs a = {.if_none_match = 1};
        int rc;
        snprintf(key, sizeof(key), "own-%d-%d", w->id, i);
        snprintf(body, sizeof(body), "worker %d round %d", w->id, i);
        if (put_obj(w->st, "g", key, body, strlen(body), NULL, NULL) != 0)
            w->errors++;
        snprintf(key, sizeof(key), "race-%d", i);
        rc = put_obj(w->st, "g", key, body, strlen(body), &a, NULL);
        if (rc == 0)
            w->won++;
        else if (rc != HD_ECONFLICT)
            w->errors++;
    }
    return NULL;
}

HD_SUITE(store_group_commit)
{
    struct gc_worker w[8];
    pthread_t th[8];
    struct fx f;
    int i, errors = 0, won = 0;

    CHECK_EQ_INT(fx_open(&f, 1, 0), 0);
    if (!f.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f.st, "g", "ais"), 0);
    for (i = 0; i < 8; i++) {
        w[i] = (struct gc_worker){.st = f.st, .id = i};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, gc_worker_main, &w[i]), 0);
    }
    for (i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        errors += w[i].errors;
        won += w[i].won;
    }
    CHECK_EQ_INT(errors, 0);
    CHECK_EQ_INT(won, 25); /* each race key once: a failed condition undid only its own row */
    CHECK_EQ_INT(count_all(&f, "objs"), 8 * 25 + 25);
    CHECK_EQ_INT(count_all(&f, "tmp"), 0);
    {
        struct hd_list_opts o = {NULL, NULL, NULL, 1000};
        struct hd_list_res r;
        CHECK_EQ_INT(hd_store_list(f.st, "g", &o, &r), 0);
        CHECK_EQ_INT(r.nents, 8 * 25 + 25);
        hd_list_res_cleanup(&r);
    }
    CHECK(content_is(f.st, "g", "own-7-24", "worker 7 round 24", 17));
out:
    fx_close(&f);
}

/* Fences (a write-through Complete's commit made after its answer): a later write or delete of
 * the name cancels the fence, a commit with a cancelled fence is refused and leaves nothing,
 * and neither the fence's own delete nor writes of other names cancel it. */
HD_SUITE(store_fence)
{
    struct hd_store_fence *f = NULL, *g = NULL;
    struct hd_put_attrs a = {0};
    struct fx f0;

    CHECK_EQ_INT(fx_open(&f0, 2, 0), 0);
    if (!f0.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f0.st, "b", "ais"), 0);
    CHECK_EQ_INT(hd_store_bucket_create(f0.st, "c", "ais"), 0);

    /* uncancelled: the fenced commit lands; its own delete and other names do not cancel */
    CHECK_EQ_INT(put_str(f0.st, "b", "k", "old"), 0);
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &f), 0);
    CHECK_EQ_INT(hd_store_delete_fenced(f0.st, "b", "k", f), 0);
    CHECK_EQ_INT(put_str(f0.st, "b", "k2", "other name"), 0);
    CHECK_EQ_INT(put_str(f0.st, "c", "k", "other bucket"), 0);
    CHECK_EQ_INT(hd_store_delete(f0.st, "b", "k2"), 0);
    a.fence = f;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "late", 4, &a, NULL), 0);
    CHECK(content_is(f0.st, "b", "k", "late", 4));
    hd_store_fence_free(f);

    /* a newer write first: the late commit is refused and the newer copy stays */
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &f), 0);
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &g), 0); /* a second fence on the name */
    CHECK_EQ_INT(put_str(f0.st, "b", "k", "newer"), 0);
    a.fence = f;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "late", 4, &a, NULL), HD_EPRECONDITION);
    CHECK(content_is(f0.st, "b", "k", "newer", 5));
    a.fence = g;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "late", 4, &a, NULL), HD_EPRECONDITION);
    hd_store_fence_free(f);
    hd_store_fence_free(g);

    /* a delete first: the late commit must not bring the name back */
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &f), 0);
    CHECK_EQ_INT(hd_store_delete(f0.st, "b", "k"), 0);
    a.fence = f;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "late", 4, &a, NULL), HD_EPRECONDITION);
    {
        struct hd_obj_meta m;
        CHECK_EQ_INT(hd_store_lookup(f0.st, "b", "k", &m), HD_ENOSUCHKEY);
    }
    hd_store_fence_free(f);

    /* two fenced commits of one name: the first cancels the other fence */
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &f), 0);
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "k", 0, &g), 0);
    a.fence = f;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "first", 5, &a, NULL), 0);
    a.fence = g;
    CHECK_EQ_INT(put_obj(f0.st, "b", "k", "second", 6, &a, NULL), HD_EPRECONDITION);
    CHECK(content_is(f0.st, "b", "k", "first", 5));
    hd_store_fence_free(f);
    hd_store_fence_free(g);

    /* the bucket destroyed, or deleted while empty: its fences are cancelled */
    for (int del = 0; del < 2; del++) {
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "c", "k", 0, &f), 0);
        CHECK_EQ_INT(del ? hd_store_bucket_delete(f0.st, "c") : hd_store_bucket_destroy(f0.st, "c"),
                     0);
        CHECK_EQ_INT(hd_store_bucket_create(f0.st, "c", "ais"), 0);
        a.fence = f;
        CHECK_EQ_INT(put_obj(f0.st, "c", "k", "late", 4, &a, NULL), HD_EPRECONDITION);
        hd_store_fence_free(f);
    }

    /* a keep_newer copy (cold fill, rebalance) of an older write yields to a standing strong
     * fence: the row the late commit replaces is gone, so there is nothing to compare with */
    {
        struct hd_put_attrs old = {.keep_newer = 1, .mtime_ms = 1000};
        CHECK_EQ_INT(put_str(f0.st, "b", "y", "before"), 0);
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "y", 0, &f), 0);
        CHECK_EQ_INT(hd_store_delete_fenced(f0.st, "b", "y", f), 0);
        CHECK_EQ_INT(put_obj(f0.st, "b", "y", "stale", 5, &old, NULL), HD_EUNAVAIL);
        {
            struct hd_put_attrs dirty = old; /* a dirty copy (write-back) never yields */
            dirty.writeback = 1;
            CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "y2", 0, &g), 0);
            CHECK_EQ_INT(put_obj(f0.st, "b", "y2", "dirty", 5, &dirty, NULL), 0);
            CHECK(hd_store_fence_cancelled(g));
            hd_store_fence_free(g);
        }
        a.fence = f;
        CHECK_EQ_INT(put_obj(f0.st, "b", "y", "late", 4, &a, NULL), 0); /* not cancelled */
        CHECK(content_is(f0.st, "b", "y", "late", 4));
        hd_store_fence_free(f);
        /* once the strong fence is cancelled (a delete), such a copy may land again */
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "y", 0, &f), 0);
        CHECK_EQ_INT(hd_store_delete(f0.st, "b", "y"), 0);
        CHECK_EQ_INT(put_obj(f0.st, "b", "y", "copy", 4, &old, NULL), 0);
        hd_store_fence_free(f);

        /* a weak fence (a cold fill's) is only told: a keep_newer copy does not yield to it,
         * and cancels it like any commit */
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "w", 1, &f), 0);
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "w", 1, &g), 0);
        CHECK(!hd_store_fence_cancelled(f));
        a.fence = g;
        old.fence = f;
        CHECK_EQ_INT(put_obj(f0.st, "b", "w", "fill", 4, &old, NULL), 0);
        CHECK(!hd_store_fence_cancelled(f));
        CHECK(hd_store_fence_cancelled(g));
        CHECK_EQ_INT(put_obj(f0.st, "b", "w", "other", 5, &a, NULL), HD_EPRECONDITION);
        CHECK(content_is(f0.st, "b", "w", "fill", 4));
        hd_store_fence_free(f);
        hd_store_fence_free(g);
    }

    /* a conditional delete (evictor, rebalance cleanup) that matches no row cancels nothing */
    {
        struct hd_obj_meta m;
        size_t mpi = hd_store_mp_index(f0.st, "b", "z");
        CHECK_EQ_INT(put_str(f0.st, "b", "z", "held"), 0);
        CHECK_EQ_INT(hd_store_lookup(f0.st, "b", "z", &m), 0);
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "z", 0, &f), 0);
        CHECK_EQ_INT(hd_store_delete_if(f0.st, mpi, "b", "z", "0123", m.mtime_ms),
                     HD_EPRECONDITION);
        CHECK_EQ_INT(hd_store_delete_moved(f0.st, mpi, "b", "z", m.etag, m.mtime_ms + 1),
                     HD_EPRECONDITION);
        CHECK(!hd_store_fence_cancelled(f));
        CHECK_EQ_INT(hd_store_delete_if(f0.st, mpi, "b", "z", m.etag, m.mtime_ms), 0);
        CHECK(hd_store_fence_cancelled(f));
        hd_store_fence_free(f);
        hd_obj_meta_cleanup(&m);
    }

    /* a commit whose fence was cancelled already is refused without cancelling anyone: a
     * stale fill must not cost the next fill, or a late Complete, its copy */
    {
        struct hd_put_attrs fill = {.keep_newer = 1, .mtime_ms = 1000};
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "s", 1, &f), 0);
        CHECK_EQ_INT(hd_store_delete(f0.st, "b", "s"), HD_ENOSUCHKEY); /* cancels f */
        CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "s", 1, &g), 0);   /* the next fill */
        fill.fence = f;
        CHECK_EQ_INT(put_obj(f0.st, "b", "s", "stale", 5, &fill, NULL), HD_EPRECONDITION);
        CHECK(!hd_store_fence_cancelled(g));
        fill.fence = g;
        CHECK_EQ_INT(put_obj(f0.st, "b", "s", "fresh", 5, &fill, NULL), 0);
        CHECK(content_is(f0.st, "b", "s", "fresh", 5));
        hd_store_fence_free(f);
        hd_store_fence_free(g);
    }
    CHECK_EQ_INT(count_all(&f0, "tmp"), 0); /* refused commits leave no temp file */
out:
    fx_close(&f0);
}

struct fence_waiter {
    struct hd_store *st;
    struct hd_store_fence *f;
    int rc;
};

static void *fence_delete_main(void *arg) /* a delete of the fenced name */
{
    struct fence_waiter *w = arg;

    w->rc = hd_store_delete(w->st, "b", "busy");
    return NULL;
}

static void *fence_new_main(void *arg) /* a fill of another name starting */
{
    struct fence_waiter *w = arg;

    w->rc = hd_store_fence_new(w->st, "b", "other", 1, &w->f);
    return NULL;
}

/* A delete waiting for a fenced commit of its name in progress holds no lock that fences
 * of other names need (before, it waited holding st->fmu: one slow commit stalled every
 * cold fill and write of the node). */
HD_SUITE(store_fence_wait)
{
    struct fence_waiter del = {0}, other = {0};
    struct hd_store_fence *f = NULL;
    pthread_t td, tn;
    struct timespec until;
    int joined = 0, i;
    struct fx f0;

    CHECK_EQ_INT(fx_open(&f0, 1, 0), 0);
    if (!f0.st)
        goto out;
    CHECK_EQ_INT(hd_store_bucket_create(f0.st, "b", "ais"), 0);
    CHECK_EQ_INT(hd_store_fence_new(f0.st, "b", "busy", 0, &f), 0);
    CHECK_EQ_INT(hd_store_fence_lock(f), 0); /* a fenced commit in progress */
    del.st = other.st = f0.st;
    CHECK_EQ_INT(pthread_create(&td, NULL, fence_delete_main, &del), 0);
    for (i = 0; i < 10000 && !hd_store_fence_cancelled(f); i++) /* the delete marked it */
        usleep(1000);
    CHECK(hd_store_fence_cancelled(f));
    CHECK_EQ_INT(pthread_create(&tn, NULL, fence_new_main, &other), 0);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    joined = pthread_timedjoin_np(tn, NULL, &until) == 0;
    CHECK(joined); /* not held up by the delete waiting for the commit */
    CHECK_EQ_INT(other.rc, 0);
    hd_store_fence_unlock(f); /* the commit ends: the delete goes on */
    pthread_join(td, NULL);
    if (!joined)
        pthread_join(tn, NULL);
    CHECK_EQ_INT(del.rc, HD_ENOSUCHKEY);
    hd_store_fence_free(other.f);
    hd_store_fence_free(f);
out:
    fx_close(&f0);
}
