#include "common/tarindex.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "common/errors.h"

#define READ_BLOCK (64 * 1024)

/* ---- locale ---- */

static pthread_once_t loc_once = PTHREAD_ONCE_INIT;
static locale_t utf8_loc;

static void loc_init(void)
{
    utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (!utf8_loc)
        utf8_loc = newlocale(LC_CTYPE_MASK, "en_US.UTF-8", (locale_t)0);
}

void *hd_tar_locale_enter(void)
{
    pthread_once(&loc_once, loc_init);
    if (!utf8_loc)
        return NULL;
    return (void *)uselocale(utf8_loc);
}

void hd_tar_locale_leave(void *prev)
{
    if (prev)
        uselocale((locale_t)prev);
}

/* ---- reading ---- */

struct src {
    int fd;                   /* -1: memory */
    const unsigned char *mem; /* memory source */
    uint64_t size, pos;
    unsigned char *buf; /* fd source: READ_BLOCK bytes */
    int err;            /* -errno of a failed pread */
};

static la_ssize_t src_read(struct archive *a, void *arg, const void **out)
{
    struct src *s = arg;
    size_t want;
    ssize_t n;

    (void)a;
    if (s->pos >= s->size)
        return 0;
    want = s->size - s->pos > READ_BLOCK ? READ_BLOCK : (size_t)(s->size - s->pos);
    if (s->fd < 0) {
        *out = s->mem + s->pos;
        s->pos += want;
        return (la_ssize_t)want;
    }
    do
        n = pread(s->fd, s->buf, want, (off_t)s->pos);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        s->err = -errno;
        return -1;
    }
    *out = s->buf;
    s->pos += (uint64_t)n;
    return (la_ssize_t)n;
}

static la_int64_t src_skip(struct archive *a, void *arg, la_int64_t req)
{
    struct src *s = arg;
    uint64_t left = s->size - s->pos;

    (void)a;
    if (req <= 0)
        return 0;
    if ((uint64_t)req > left)
        req = (la_int64_t)left;
    s->pos += (uint64_t)req;
    return req;
}

static la_int64_t src_seek(struct archive *a, void *arg, la_int64_t off, int whence)
{
    struct src *s = arg;
    la_int64_t base = whence == SEEK_SET   ? 0
                      : whence == SEEK_CUR ? (la_int64_t)s->pos
                                           : (la_int64_t)s->size;

    (void)a;
    if (off < -base || base + off > (la_int64_t)s->size)
        return ARCHIVE_FATAL;
    s->pos = (uint64_t)(base + off);
    return (la_int64_t)s->pos;
}

/* Opens a on s (callbacks set): ARCHIVE_OK, or the failure with rc and msg filled as "not
 * WHAT (libarchive's reason)". */
static int src_open(struct archive *a, struct src *s, const char *what, int *rc, char *msg,
                    size_t msglen)
{
    archive_read_set_read_callback(a, src_read);
    archive_read_set_skip_callback(a, src_skip);
    archive_read_set_seek_callback(a, src_seek);
    archive_read_set_callback_data(a, s);
    if (archive_read_open1(a) == ARCHIVE_OK)
        return ARCHIVE_OK;
    *rc = s->err ? s->err : HD_ENOTARCHIVE;
    if (msg)
        snprintf(msg, msglen, "not %s (%s)", what,
                 archive_error_string(a) ? archive_error_string(a) : "unknown format");
    return ARCHIVE_FATAL;
}

static const char *clean_name(const char *n)
{
    while (n[0] == '.' && n[1] == '/')
        n += 2;
    while (*n == '/')
        n++;
    return n;
}

/* The member name of e (leading "./" and "/" dropped), or NULL when e is no member: not a
 * regular file with a known size, a link, sparse, or a name that is empty or too long. */
static const char *member_name(struct archive_entry *e)
{
    const char *name = archive_entry_pathname_utf8(e);

    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) ||
        archive_entry_sparse_count(e) > 0 || !archive_entry_size_is_set(e) ||
        archive_entry_size(e) < 0 || !name || !*(name = clean_name(name)) ||
        strlen(name) > HD_TAR_NAME_MAX)
        return NULL;
    return name;
}

static int scan(struct src *s, hd_tar_member_fn fn, void *arg, struct hd_tar_scan_stats *st,
                char *msg, size_t msglen)
{
    struct hd_tar_scan_stats local = {0, 0};
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    void *loc;
    int rc = 0, r;

    if (!st)
        st = &local;
    memset(st, 0, sizeof(*st));
    if (msg && msglen)
        msg[0] = '\0';
    if (!a)
        return -ENOMEM;
    loc = hd_tar_locale_enter();
    /* tar only, no decompression filters: a member must be a contiguous byte range */
    archive_read_support_format_tar(a);
    if (src_open(a, s, "an uncompressed tar archive", &rc, msg, msglen) != ARCHIVE_OK)
        goto out;
    for (;;) {
        struct hd_tar_member m;
        const char *name;
        la_int64_t size;

        r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            rc = s->err ? s->err : HD_ENOTARCHIVE;
            if (msg)
                snprintf(msg, msglen, "corrupt or truncated tar archive after %llu members (%s)",
                         (unsigned long long)st->members,
                         archive_error_string(a) ? archive_error_string(a) : "read error");
            goto out;
        }
        size = archive_entry_size(e);
        if (!(name = member_name(e))) {
            st->skipped++;
            continue;
        }
        m.name = name;
        m.off = (uint64_t)archive_filter_bytes(a, 0);
        m.size = (uint64_t)size;
        m.mtime = (int64_t)archive_entry_mtime(e);
        if (m.off > s->size || m.size > s->size - m.off) {
            rc = HD_ENOTARCHIVE;
            if (msg)
                snprintf(msg, msglen,
                         "truncated tar archive: member '%.200s' needs %llu bytes "
                         "at offset %llu of %llu",
                         name, (unsigned long long)m.size, (unsigned long long)m.off,
                         (unsigned long long)s->size);
            goto out;
        }
        st->members++;
        if ((rc = fn(arg, &m)) != 0)
            goto out;
    }
out:
    archive_read_free(a);
    hd_tar_locale_leave(loc);
    return rc;
}

int hd_tarindex_fd(int fd, uint64_t size, hd_tar_member_fn fn, void *arg,
                   struct hd_tar_scan_stats *st, char *msg, size_t msglen)
{
    struct src s = {fd, NULL, size, 0, NULL, 0};
    int rc;

    if (!(s.buf = malloc(READ_BLOCK)))
        return -ENOMEM;
    rc = scan(&s, fn, arg, st, msg, msglen);
    free(s.buf);
    return rc;
}

int hd_tarindex_mem(const void *data, size_t size, hd_tar_member_fn fn, void *arg,
                    struct hd_tar_scan_stats *st, char *msg, size_t msglen)
{
    struct src s = {-1, data, size, 0, NULL, 0};

    return scan(&s, fn, arg, st, msg, msglen);
}

/* ---- any archive, read in order (compressed tars, zip) ---- */

int hd_archive_read_fd(int fd, uint64_t size, hd_arch_want_fn want, hd_arch_data_fn data, void *arg,
                       char *msg, size_t msglen)
{
    struct src s = {fd, NULL, size, 0, NULL, 0};
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    char *buf = malloc(READ_BLOCK);
    uint64_t n = 0;
    void *loc;
    int rc = 0, r, w;

    if (msg && msglen)
        msg[0] = '\0';
    if (!a || !buf || !(s.buf = malloc(READ_BLOCK))) {
        if (a)
            archive_read_free(a);
        free(buf);
        return -ENOMEM;
    }
    loc = hd_tar_locale_enter();
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a); /* the central directory when it can seek */
    if (src_open(a, &s, "a tar (plain or compressed) or zip archive", &rc, msg, msglen) !=
        ARCHIVE_OK)
        goto out;
    for (;;) {
        struct hd_arch_entry ent;
        const char *name;

        r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
            goto corrupt;
        if (!(name = member_name(e)))
            continue;
        n++;
        ent.name = name;
        ent.size = (uint64_t)archive_entry_size(e);
        ent.mtime = (int64_t)archive_entry_mtime(e);
        w = want(arg, &ent);
        if (w < 0 || w == HD_ARCH_STOP) {
            rc = w < 0 ? w : 0;
            goto out;
        }
        if (w == HD_ARCH_SKIP)
            continue;
        for (;;) {
            la_ssize_t got = archive_read_data(a, buf, READ_BLOCK);
            if (got < 0)
                goto corrupt;
            if (got == 0)
                break;
            if ((rc = data(arg, buf, (size_t)got)) != 0)
                goto out;
        }
        if (w == HD_ARCH_READ_STOP)
            goto out;
    }
    goto out;
corrupt:
    rc = s.err ? s.err : HD_ENOTARCHIVE;
    if (msg)
        snprintf(msg, msglen, "corrupt, truncated or encrypted archive after %llu members (%s)",
                 (unsigned long long)n,
                 archive_error_string(a) ? archive_error_string(a) : "read error");
out:
    archive_read_free(a);
    hd_tar_locale_leave(loc);
    free(s.buf);
    free(buf);
    return rc;
}

/* ---- writing ---- */

struct wctx {
    hd_tar_write_fn write;
    void *arg;
};

static la_ssize_t w_write(struct archive *a, void *arg, const void *buf, size_t n)
{
    struct wctx *w = arg;
    long got = w->write(w->arg, buf, n);

    if (got < 0) {
        archive_set_error(a, EIO, "output failed");
        return -1;
    }
    return (la_ssize_t)got;
}

static int w_close(struct archive *a, void *arg)
{
    (void)a;
    (void)arg;
    return ARCHIVE_OK;
}

/* libarchive calls the free callback exactly once, from archive_write_free */
static int w_free(struct archive *a, void *arg)
{
    (void)a;
    free(arg);
    return ARCHIVE_OK;
}

struct archive *hd_tar_writer_new(hd_tar_write_fn write, void *arg)
{
    return hd_tar_writer_new2(write, arg, 0);
}

static const struct {
    const char *name, *ctype;
} arch_fmts[] = {
    [HD_ARCH_TAR] = {"tar", "application/x-tar"},
    [HD_ARCH_TGZ] = {"tar.gz", "application/gzip"},
    [HD_ARCH_TLZ4] = {"tar.lz4", "application/x-lz4"},
    [HD_ARCH_TZST] = {"tar.zst", "application/zstd"},
    [HD_ARCH_ZIP] = {"zip", "application/zip"},
};

const char *hd_arch_fmt_name(int fmt)
{
    return fmt >= 0 && fmt <= HD_ARCH_ZIP ? arch_fmts[fmt].name : "?";
}

const char *hd_arch_fmt_ctype(int fmt)
{
    return fmt >= 0 && fmt <= HD_ARCH_ZIP ? arch_fmts[fmt].ctype : "application/octet-stream";
}

int hd_arch_fmt_parse(const char *s)
{
    int i;

    if (!s)
        return -1;
    if (*s == '.')
        s++;
    if (strcmp(s, "tgz") == 0)
        return HD_ARCH_TGZ;
    if (strcmp(s, "tar.zstd") == 0)
        return HD_ARCH_TZST;
    for (i = 0; i <= HD_ARCH_ZIP; i++)
        if (strcmp(s, arch_fmts[i].name) == 0)
            return i;
    return -1;
}

/* The writer's format and filter for fmt: ARCHIVE_OK or libarchive's failure. */
static int writer_format(struct archive *a, int fmt)
{
    if (fmt == HD_ARCH_ZIP)
        return archive_write_set_format_zip(a) == ARCHIVE_OK
                   ? archive_write_set_format_option(a, "zip", "compression", "store")
                   : ARCHIVE_FATAL;
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK)
        return ARCHIVE_FATAL;
    /* the fastest levels (what each format costs: docs/performance.md, "Batch GET output
     * formats"); lz4's 64 KiB blocks (libarchive's default, 4 MiB, holds 12 MiB
     * per stream and sends nothing before 4 MiB of tar); zstd level 1: about 2 MiB a stream */
    switch (fmt) {
    case HD_ARCH_TAR:
        return ARCHIVE_OK;
    case HD_ARCH_TGZ:
        return archive_write_add_filter_gzip(a) == ARCHIVE_OK
                   ? archive_write_set_filter_option(a, "gzip", "compression-level", "1")
                   : ARCHIVE_FATAL;
    case HD_ARCH_TLZ4:
        return archive_write_add_filter_lz4(a) == ARCHIVE_OK
                   ? archive_write_set_filter_option(a, "lz4", "block-size", "4")
                   : ARCHIVE_FATAL;
    case HD_ARCH_TZST:
        return archive_write_add_filter_zstd(a) == ARCHIVE_OK
                   ? archive_write_set_filter_option(a, "zstd", "compression-level", "1")
                   : ARCHIVE_FATAL;
    default:
        return ARCHIVE_FATAL;
    }
}

struct archive *hd_tar_writer_new2(hd_tar_write_fn write, void *arg, int fmt)
{
    struct archive *a = archive_write_new();
    struct wctx *w = calloc(1, sizeof(*w));

    if (!a || !w)
        goto fail;
    w->write = write;
    w->arg = arg;
    /* ARCHIVE_WARN: an external program would compress; only the library's own will do */
    if (writer_format(a, fmt) != ARCHIVE_OK || archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK)
        goto fail;
    if (archive_write_open2(a, w, NULL, w_write, w_close, w_free) != ARCHIVE_OK) {
        w = NULL; /* freed by w_free in archive_write_free */
        goto fail;
    }
    return a;
fail:
    free(w);
    if (a)
        archive_write_free(a);
    return NULL;
}

int hd_tar_write_header(struct archive *a, const char *name, uint64_t size, int64_t mtime,
                        char *msg, size_t msglen)
{
    struct archive_entry *e = archive_entry_new();
    int r;

    if (!e)
        return -ENOMEM;
    archive_entry_set_pathname_utf8(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, (time_t)mtime, 0);
    archive_entry_set_uname(e, "hoard");
    archive_entry_set_gname(e, "hoard");
    r = archive_write_header(a, e);
    archive_entry_free(e);
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
        if (msg)
            snprintf(msg, msglen, "tar header for '%.200s': %s", name,
                     archive_error_string(a) ? archive_error_string(a) : "failed");
        return HD_EBADARG;
    }
    return 0;
}

const char *hd_tar_ctype(const char *name)
{
    static const char *const map[][2] = {
        {"jpg", "image/jpeg"},        {"jpeg", "image/jpeg"}, {"png", "image/png"},
        {"gif", "image/gif"},         {"webp", "image/webp"}, {"bmp", "image/bmp"},
        {"tif", "image/tiff"},        {"tiff", "image/tiff"}, {"json", "application/json"},
        {"txt", "text/plain"},        {"cls", "text/plain"},  {"csv", "text/csv"},
        {"xml", "application/xml"},   {"wav", "audio/wav"},   {"flac", "audio/flac"},
        {"mp3", "audio/mpeg"},        {"mp4", "video/mp4"},   {"npy", "application/octet-stream"},
        {"tar", "application/x-tar"},
    };
    const char *slash = strrchr(name, '/'), *dot;
    size_t i;

    dot = strrchr(slash ? slash + 1 : name, '.');
    if (dot && dot[1])
        for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
            if (strcasecmp(dot + 1, map[i][0]) == 0)
                return map[i][1];
    return "application/octet-stream";
}
