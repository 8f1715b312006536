/* libFuzzer driver for the in-order archive reader (common/tarindex, hd_archive_read_fd) that
 * serves members of compressed tars and zips users upload. Input: the archive bytes (read
 * from an anonymous file, as the target reads a content file). The reader must end with 0,
 * HD_ENOTARCHIVE and a reason, or the callbacks' own error; never report an empty name; and
 * read the same way twice. Decompressed bytes are capped so that bombs end quickly. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/tarindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP (8u << 20)
#define TOO_MUCH 99

struct acc {
    uint64_t n, bytes, sum;
};

static int want(void *arg, const struct hd_arch_entry *e)
{
    struct acc *a = arg;

    if (!e->name || !*e->name || strlen(e->name) > HD_TAR_NAME_MAX)
        __builtin_trap();
    a->n++;
    a->sum += e->size ^ (uint64_t)strlen(e->name);
    return (a->n & 1) ? HD_ARCH_READ : HD_ARCH_SKIP;
}

static int got(void *arg, const void *buf, size_t n)
{
    struct acc *a = arg;

    if (!buf || !n)
        __builtin_trap();
    a->bytes += n;
    return a->bytes > CAP ? TOO_MUCH : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct acc a = {0, 0, 0}, b = {0, 0, 0};
    char msg[256];
    int fd = memfd_create("fuzz", 0), rc, rc2;

    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    rc = hd_archive_read_fd(fd, size, want, got, &a, msg, sizeof(msg));
    if (rc != 0 && rc != HD_ENOTARCHIVE && rc != TOO_MUCH && rc != -ENOMEM)
        __builtin_trap();
    if (rc == HD_ENOTARCHIVE && !msg[0])
        __builtin_trap();
    rc2 = hd_archive_read_fd(fd, size, want, got, &b, msg, sizeof(msg));
    if (rc2 != rc || a.n != b.n || a.bytes != b.bytes || a.sum != b.sum)
        __builtin_trap();
    close(fd);
    return 0;
}
