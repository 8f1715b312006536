/* Unit tests for common/tarindex (tar member tables with libarchive) and the tar size rule of
 * common/shardplan: archives written by hoard's writer and by GNU tar-style layouts are
 * indexed with the right data offsets; truncated, compressed and garbage inputs are refused
 * with a reason; hd_tar_entry_size matches what the writer really emits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/shardplan.h"
#include "common/tarindex.h"
#include "test/unit/hd_test.h"

static long to_buf(void *arg, const void *p, size_t n)
{
    return hd_buf_append(arg, p, n) < 0 ? -1 : (long)n;
}

struct ent {
    const char *name;
    size_t size;
};

/* A tar of ents written by hoard's writer; member i holds bytes (i * 7 + k) & 0xff. */
static void write_tar(struct hd_buf *out, const struct ent *e, size_t n)
{
    void *loc = hd_tar_locale_enter();
    struct archive *a = hd_tar_writer_new(to_buf, out);
    size_t i, k;

    CHECK(a != NULL);
    for (i = 0; a && i < n; i++) {
        char *d = malloc(e[i].size + 1);
        for (k = 0; k < e[i].size; k++)
            d[k] = (char)((i * 7 + k) & 0xff);
        CHECK_EQ_INT(hd_tar_write_header(a, e[i].name, e[i].size, 1700000000, NULL, 0), 0);
        if (e[i].size)
            CHECK_EQ_INT(archive_write_data(a, d, e[i].size), (long long)e[i].size);
        free(d);
    }
    if (a) {
        CHECK_EQ_INT(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
    }
    hd_tar_locale_leave(loc);
}

struct got {
    char names[16][300];
    uint64_t off[16], size[16];
    size_t n;
};

static int collect(void *arg, const struct hd_tar_member *m)
{
    struct got *g = arg;

    if (g->n < 16) {
        snprintf(g->names[g->n], sizeof(g->names[0]), "%s", m->name);
        g->off[g->n] = m->off;
        g->size[g->n] = m->size;
        g->n++;
    }
    return 0;
}

HD_SUITE(tarindex_roundtrip)
{
    char longname[260], deep[300];
    struct ent e[6];
    struct hd_buf b;
    struct got g;
    struct hd_tar_scan_stats st;
    char msg[256];
    size_t i, k;

    memset(longname, 'n', 200);
    longname[200] = '\0';
    snprintf(deep, sizeof(deep), "dir/%s/ünïcödé.jpg", longname);
    e[0] = (struct ent){"a/0001.jpg", 1000};
    e[1] = (struct ent){"a/0001.cls", 1};
    e[2] = (struct ent){"empty", 0};
    e[3] = (struct ent){longname, 513};
    e[4] = (struct ent){deep, 100000};
    e[5] = (struct ent){"ünï.txt", 3};
    hd_buf_init(&b);
    write_tar(&b, e, 6);
    memset(&g, 0, sizeof(g));
    CHECK_EQ_INT(hd_tarindex_mem(b.data, b.len, collect, &g, &st, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(g.n, 6);
    CHECK_EQ_INT(st.members, 6);
    CHECK_EQ_INT(st.skipped, 0);
    for (i = 0; i < g.n && i < 6; i++) {
        int same = 1;
        CHECK_EQ_STR(g.names[i], e[i].name);
        CHECK_EQ_INT(g.size[i], e[i].size);
        for (k = 0; k < e[i].size; k++) /* the data really starts at off */
            same &= (unsigned char)b.data[g.off[i] + k] == ((i * 7 + k) & 0xff);
        CHECK(same);
    }
    CHECK_EQ_INT(g.off[0], 512);
    /* the tar size rule used for packing is exactly what the writer emits */
    {
        uint64_t sum = 1024;
        for (i = 0; i < 6; i++)
            sum += hd_tar_entry_size(e[i].name, e[i].size);
        CHECK_EQ_INT(sum, b.len);
    }
    /* truncated inside the last member's data */
    memset(&g, 0, sizeof(g));
    CHECK_EQ_INT(hd_tarindex_mem(b.data, b.len - 2000, collect, &g, NULL, msg, sizeof(msg)),
                 HD_ENOTARCHIVE);
    CHECK(strstr(msg, "truncated") != NULL);
    /* not a tar */
    CHECK_EQ_INT(
        hd_tarindex_mem("hello world, not a tar at all", 29, collect, &g, NULL, msg, sizeof(msg)),
        HD_ENOTARCHIVE);
    CHECK(strstr(msg, "not an uncompressed tar") != NULL);
    /* gzip magic: compressed archives are refused (members are not byte ranges) */
    {
        unsigned char gz[600] = {0x1f, 0x8b, 0x08, 0};
        CHECK_EQ_INT(hd_tarindex_mem(gz, sizeof(gz), collect, &g, NULL, msg, sizeof(msg)),
                     HD_ENOTARCHIVE);
    }
    /* an empty archive (two zero blocks) has no members */
    {
        char zero[1024];
        memset(zero, 0, sizeof(zero));
        memset(&g, 0, sizeof(g));
        CHECK_EQ_INT(hd_tarindex_mem(zero, sizeof(zero), collect, &g, NULL, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(g.n, 0);
    }
    hd_buf_cleanup(&b);
}

static int stop_at_two(void *arg, const struct hd_tar_member *m)
{
    int *n = arg;

    (void)m;
    return ++*n == 2 ? 42 : 0;
}

HD_SUITE(tarindex_fd_and_stop)
{
    struct ent e[3] = {{"x", 10}, {"y", 70000}, {"z", 5}};
    char path[] = "/tmp/hd-tarindex-XXXXXX", msg[128];
    struct hd_buf b;
    struct got g;
    int fd, n = 0;

    hd_buf_init(&b);
    write_tar(&b, e, 3);
    fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, b.data, b.len), (long long)b.len);
    memset(&g, 0, sizeof(g));
    CHECK_EQ_INT(hd_tarindex_fd(fd, b.len, collect, &g, NULL, msg, sizeof(msg)), 0);
    CHECK_EQ_INT(g.n, 3);
    CHECK_EQ_STR(g.names[2], "z");
    CHECK_EQ_INT(g.off[1], 1536);
    CHECK_EQ_INT(hd_tarindex_fd(fd, b.len, stop_at_two, &n, NULL, msg, sizeof(msg)), 42);
    /* a size smaller than the file: the archive is cut there */
    CHECK_EQ_INT(hd_tarindex_fd(fd, 3000, collect, &g, NULL, msg, sizeof(msg)), HD_ENOTARCHIVE);
    close(fd);
    unlink(path);
    hd_buf_cleanup(&b);
}

HD_SUITE(tar_ctype_and_sizes)
{
    char n255[300];

    CHECK_EQ_STR(hd_tar_ctype("a/b.JPG"), "image/jpeg");
    CHECK_EQ_STR(hd_tar_ctype("x.json"), "application/json");
    CHECK_EQ_STR(hd_tar_ctype("x.cls"), "text/plain");
    CHECK_EQ_STR(hd_tar_ctype("dir.d/noext"), "application/octet-stream");
    CHECK_EQ_STR(hd_tar_ctype("x."), "application/octet-stream");
    CHECK_EQ_INT(hd_tar_entry_size("a", 0), 512);
    CHECK_EQ_INT(hd_tar_entry_size("a", 1), 1024);
    CHECK_EQ_INT(hd_tar_entry_size("a", 512), 1024);
    CHECK_EQ_INT(hd_tar_entry_size("ü", 1), 2048); /* non-ASCII: a pax header */
    memset(n255, 'a', 254);
    n255[254] = '\0';
    n255[100] = '/'; /* prefix 100 + name 153: too long for the name field -> pax */
    CHECK_EQ_INT(hd_tar_entry_size(n255, 1), 2048);
    n255[100] = 'a';
    n255[150] = '/'; /* prefix 150, name 103 > 100 -> pax */
    CHECK_EQ_INT(hd_tar_entry_size(n255, 1), 2048);
    n255[150] = 'a';
    n255[160] = '/'; /* prefix 160 > 155 -> pax */
    CHECK_EQ_INT(hd_tar_entry_size(n255, 1), 2048);
    memset(n255, 'b', 200);
    n255[200] = '\0';
    n255[120] = '/'; /* prefix 120, name 79: ustar */
    CHECK_EQ_INT(hd_tar_entry_size(n255, 1), 1024);
}

/* ---- hd_archive_read_fd: compressed tars and zips, read in order ---- */

/* An archive of ents (member i holds bytes (i * 7 + k) & 0xff) in format fmt (with the gzip
 * filter when gz), written with libarchive into out. */
static void write_packed(struct hd_buf *out, const struct ent *e, size_t n, int zip, int gz)
{
    struct archive *a = archive_write_new();
    size_t i, k, used = 0, cap = 1u << 20;
    char *mem = malloc(cap);

    CHECK(a && mem);
    if (zip)
        CHECK_EQ_INT(archive_write_set_format_zip(a), ARCHIVE_OK);
    else
        CHECK_EQ_INT(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    if (gz)
        CHECK_EQ_INT(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    CHECK_EQ_INT(archive_write_open_memory(a, mem, cap, &used), ARCHIVE_OK);
    for (i = 0; i < n; i++) {
        struct archive_entry *en = archive_entry_new();
        char *d = malloc(e[i].size + 1);
        for (k = 0; k < e[i].size; k++)
            d[k] = (char)((i * 7 + k) & 0xff);
        archive_entry_set_pathname(en, e[i].name);
        archive_entry_set_filetype(en, AE_IFREG);
        archive_entry_set_perm(en, 0644);
        archive_entry_set_size(en, (la_int64_t)e[i].size);
        CHECK_EQ_INT(archive_write_header(a, en), ARCHIVE_OK);
        if (e[i].size)
            CHECK_EQ_INT(archive_write_data(a, d, e[i].size), (long long)e[i].size);
        archive_entry_free(en);
        free(d);
    }
    CHECK_EQ_INT(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    hd_buf_append(out, mem, used);
    free(mem);
}

struct pk {
    const char *stop_at; /* want() says HD_ARCH_STOP there */
    const char *only;    /* want() reads this one and stops (HD_ARCH_READ_STOP) */
    int fail_data;       /* data() fails with 77 */
    char names[8][64];
    uint64_t size[8];
    struct hd_buf data[8];
    size_t n;
};

static int pk_want(void *arg, const struct hd_arch_entry *e)
{
    struct pk *p = arg;

    if (p->stop_at && strcmp(e->name, p->stop_at) == 0)
        return HD_ARCH_STOP;
    if (p->only && strcmp(e->name, p->only) != 0)
        return HD_ARCH_SKIP;
    if (p->n >= 8)
        return -1;
    snprintf(p->names[p->n], sizeof(p->names[0]), "%s", e->name);
    p->size[p->n] = e->size;
    hd_buf_init(&p->data[p->n]);
    p->n++;
    return p->only ? HD_ARCH_READ_STOP : HD_ARCH_READ;
}

static int pk_data(void *arg, const void *buf, size_t n)
{
    struct pk *p = arg;

    if (p->fail_data)
        return 77;
    return hd_buf_append(&p->data[p->n - 1], buf, n) < 0 ? -1 : 0;
}

static void pk_free(struct pk *p)
{
    size_t i;

    for (i = 0; i < p->n; i++)
        hd_buf_cleanup(&p->data[i]);
    memset(p, 0, sizeof(*p));
}

/* b's bytes in an anonymous file (what the target reads: a content file's descriptor). */
static int to_memfd(const struct hd_buf *b)
{
    int fd = memfd_create("hd-packed", MFD_CLOEXEC);

    CHECK(fd >= 0);
    CHECK_EQ_INT(write(fd, b->data, b->len), (long long)b->len);
    return fd;
}

HD_SUITE(archive_read_packed)
{
    struct ent e[3] = {{"d/a.jpg", 1000}, {"d/b.cls", 70000}, {"./d/c.json", 5}};
    static const char *const want_names[3] = {"d/a.jpg", "d/b.cls", "d/c.json"};
    int kinds[3][2] = {{0, 1}, {1, 0}, {1, 1}}; /* tgz, zip, zip in gzip (still read) */
    char msg[256];
    size_t kind, i, k;

    for (kind = 0; kind < 3; kind++) {
        struct hd_buf b;
        struct pk p;
        int fd;

        hd_buf_init(&b);
        write_packed(&b, e, 3, kinds[kind][0], kinds[kind][1]);
        fd = to_memfd(&b);
        /* every member, in order, its bytes */
        memset(&p, 0, sizeof(p));
        CHECK_EQ_INT(hd_archive_read_fd(fd, b.len, pk_want, pk_data, &p, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(p.n, 3);
        for (i = 0; i < p.n && i < 3; i++) {
            int same = p.data[i].len == e[i].size;
            CHECK_EQ_STR(p.names[i], want_names[i]); /* "./" dropped */
            CHECK_EQ_INT(p.size[i], e[i].size);
            for (k = 0; same && k < e[i].size; k++)
                same &= (unsigned char)p.data[i].data[k] == ((i * 7 + k) & 0xff);
            CHECK(same);
        }
        pk_free(&p);
        /* one member, then stop; a stop before anything is read */
        p.only = "d/b.cls";
        CHECK_EQ_INT(hd_archive_read_fd(fd, b.len, pk_want, pk_data, &p, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(p.n, 1);
        CHECK_EQ_INT(p.data[0].len, 70000);
        pk_free(&p);
        p.stop_at = "d/b.cls";
        CHECK_EQ_INT(hd_archive_read_fd(fd, b.len, pk_want, pk_data, &p, msg, sizeof(msg)), 0);
        CHECK_EQ_INT(p.n, 1);
        pk_free(&p);
        /* data()'s error stops the read and is returned */
        p.fail_data = 1;
        CHECK_EQ_INT(hd_archive_read_fd(fd, b.len, pk_want, pk_data, &p, msg, sizeof(msg)), 77);
        pk_free(&p);
        /* cut short (the gzip trailer and the end blocks lost): a member before the cut is
         * read, reading on fails */
        if (kind == 0) {
            p.only = "d/a.jpg";
            CHECK_EQ_INT(hd_archive_read_fd(fd, b.len - 12, pk_want, pk_data, &p, msg, sizeof(msg)),
                         0);
            CHECK_EQ_INT(p.n, 1);
            CHECK_EQ_INT(p.data[0].len, 1000);
            pk_free(&p);
            CHECK_EQ_INT(hd_archive_read_fd(fd, b.len - 12, pk_want, pk_data, &p, msg, sizeof(msg)),
                         HD_ENOTARCHIVE);
            CHECK(strstr(msg, "corrupt, truncated") != NULL);
            pk_free(&p);
        }
        close(fd);
        hd_buf_cleanup(&b);
    }
    /* bytes that are no archive at all */
    {
        struct hd_buf b;
        struct pk p;
        int fd;
        hd_buf_init(&b);
        hd_buf_append(&b, "\x1f\x8b not really gzip, just its magic and some words", 48);
        fd = to_memfd(&b);
        memset(&p, 0, sizeof(p));
        CHECK_EQ_INT(hd_archive_read_fd(fd, b.len, pk_want, pk_data, &p, msg, sizeof(msg)),
                     HD_ENOTARCHIVE);
        CHECK(msg[0] != '\0');
        CHECK_EQ_INT(p.n, 0);
        close(fd);
        hd_buf_cleanup(&b);
    }
}
