/* tarindex: reads the member table of an uncompressed tar archive (ustar, pax, GNU) with
 * libarchive: for each regular file its name, the offset of its first data byte in the archive
 * and its size, so that one member can later be served with a single ranged read. Sources are
 * seekable (a file descriptor or a memory buffer): only headers are read, data is skipped.
 * Also the tar writer's shared settings (hd_tar_writer_new) and the thread-local UTF-8 locale
 * libarchive needs to convert non-ASCII names. Any thread. */
#ifndef HD_TARINDEX_H
#define HD_TARINDEX_H

#include <stddef.h>
#include <stdint.h>

struct archive;

/* Longest member name kept; longer names are skipped (counted in hd_tar_scan_stats). */
#define HD_TAR_NAME_MAX 4096

struct hd_tar_member {
    const char *name; /* UTF-8, leading "./" removed; valid during the callback only */
    uint64_t off;     /* first data byte in the archive */
    uint64_t size;
    int64_t mtime; /* seconds */
};

struct hd_tar_scan_stats {
    uint64_t members; /* regular files reported */
    uint64_t skipped; /* entries not reported: directories, links, sparse files, bad names */
};

/* Returns 0 to go on; anything else stops the scan and is returned by the scanner. */
typedef int (*hd_tar_member_fn)(void *arg, const struct hd_tar_member *m);

/* Scans the archive held in bytes [0, size) of fd (read with pread; the fd's offset is not
 * used) or in memory. 0 when the whole archive was read; HD_ENOTARCHIVE with a message in
 * msg when the bytes are not an uncompressed tar or are truncated or corrupt (a member whose
 * data would end past `size` included); the callback's non-zero return; -ENOMEM. st may be
 * NULL. */
int hd_tarindex_fd(int fd, uint64_t size, hd_tar_member_fn fn, void *arg,
                   struct hd_tar_scan_stats *st, char *msg, size_t msglen);
int hd_tarindex_mem(const void *data, size_t size, hd_tar_member_fn fn, void *arg,
                    struct hd_tar_scan_stats *st, char *msg, size_t msglen);

/* Any archive libarchive reads in order, for what has no member table: a tar compressed
 * with any of its filters (gzip, bzip2, xz, zstd, lz4, ...) or a zip (its central directory;
 * stored or deflated members). For each regular file (names as above) want() says what to do;
 * the chosen members' bytes go to data() (0 to go on, else the scan stops and returns it).
 * 0 when done; HD_ENOTARCHIVE with a message when the bytes are no such archive or are
 * corrupt, truncated or encrypted; a callback's error; -ENOMEM. Every byte up to the last
 * member wanted is decompressed. */
struct hd_arch_entry {
    const char *name; /* valid during the callbacks for this entry only */
    uint64_t size;
    int64_t mtime;
};
enum { HD_ARCH_SKIP, HD_ARCH_READ, HD_ARCH_READ_STOP, HD_ARCH_STOP };
typedef int (*hd_arch_want_fn)(void *arg, const struct hd_arch_entry *e);
typedef int (*hd_arch_data_fn)(void *arg, const void *buf, size_t n);
int hd_archive_read_fd(int fd, uint64_t size, hd_arch_want_fn want, hd_arch_data_fn data, void *arg,
                       char *msg, size_t msglen);

/* Switches the calling thread to a UTF-8 LC_CTYPE for libarchive's name conversions (in the
 * "C" locale libarchive 3.6 cannot store or report non-ASCII names; one combination even
 * crashes) and back. enter returns the previous locale handle for leave. */
void *hd_tar_locale_enter(void);
void hd_tar_locale_leave(void *prev);

/* A libarchive writer for streaming tar output: pax-restricted format (plain ustar headers
 * unless a long name or a large size needs a pax extension), no output blocking (every
 * header and data write reaches `write` at once; the end is two zero blocks, no padding to a
 * 10 KiB record). write returns the count written or -1 after setting nothing (libarchive
 * then fails the call). NULL on failure. Use under hd_tar_locale_enter. */
typedef long (*hd_tar_write_fn)(void *arg, const void *buf, size_t n);
struct archive *hd_tar_writer_new(hd_tar_write_fn write, void *arg);
/* The output formats of batch GETs and shard jobs: a tar, compressed (write then gets the
 * compressed stream, in the compressor's pieces), or a zip (members stored, not deflated:
 * samples are mostly compressed already; a central directory at the end). */
enum { HD_ARCH_TAR = 0, HD_ARCH_TGZ, HD_ARCH_TLZ4, HD_ARCH_TZST, HD_ARCH_ZIP };
/* A format's name ("tar", "tar.gz", "tar.lz4", "tar.zst", "zip") and Content-Type. */
const char *hd_arch_fmt_name(int fmt);
const char *hd_arch_fmt_ctype(int fmt);
/* The format a name means: the names above, also with a leading dot, and "tgz", ".tgz",
 * "tar.zstd"; -1 for anything else. */
int hd_arch_fmt_parse(const char *s);
/* The same as hd_tar_writer_new, in format fmt (HD_ARCH_*). */
struct archive *hd_tar_writer_new2(hd_tar_write_fn write, void *arg, int fmt);
/* Writes one regular-file header (mode 0644). 0 or HD_EBADARG with the reason in msg. */
int hd_tar_write_header(struct archive *a, const char *name, uint64_t size, int64_t mtime,
                        char *msg, size_t msglen);

/* Content-Type for a member name by its extension (jpg, png, json, txt, cls, ...). */
const char *hd_tar_ctype(const char *name);

#endif
