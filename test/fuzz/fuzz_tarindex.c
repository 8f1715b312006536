/* libFuzzer driver for the tar member scanner (common/tarindex) that indexes tars users
 * upload. Input: the archive bytes. Every reported member must lie inside the input, and a
 * scan that succeeds must be repeatable with the same result. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tarindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
    size_t size;
    uint64_t n, sum;
};

static int check(void *arg, const struct hd_tar_member *m)
{
    struct acc *a = arg;

    if (m->off > a->size || m->size > a->size - m->off || !m->name || !*m->name ||
        strlen(m->name) > HD_TAR_NAME_MAX)
        __builtin_trap();
    a->n++;
    a->sum += m->off ^ m->size;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct acc a = {size, 0, 0}, b = {size, 0, 0};
    char msg[256];
    int rc, rc2;

    rc = hd_tarindex_mem(data, size, check, &a, NULL, msg, sizeof(msg));
    if (rc != 0 && rc != HD_ENOTARCHIVE && rc != -ENOMEM)
        __builtin_trap();
    if (rc == HD_ENOTARCHIVE && !msg[0])
        __builtin_trap();
    rc2 = hd_tarindex_mem(data, size, check, &b, NULL, msg, sizeof(msg));
    if (rc2 != rc || a.n != b.n || a.sum != b.sum)
        __builtin_trap();
    return 0;
}
