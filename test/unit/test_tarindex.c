/* Unit tests for common/tarindex (tar member tables with libarchive) and the tar size rule of
 * common/shardplan: archives written by hoard's writer and by GNU tar-style layouts are
 * indexed with the right data offsets; truncated, compressed and garbage inputs are refused
 * with a reason; hd_tar_entry_size matches what the writer really emits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>

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
