/* Fences: a commit of bucket/name deferred past the write it belongs to (a write-through
 * Complete is answered once the upstream has the object; its cached copy is assembled and
 * committed afterwards). Any later commit or delete of the name cancels the fence before it
 * changes the catalog, and the fenced commit checks the fence while holding its lock, so a
 * deferred commit can never undo a newer write or a delete: of the two, whichever comes
 * second wins, as if the deferred commit had been made at the answer. Such a fence is strong:
 * while it stands, a keep_newer commit of the name (a copy of an earlier write: a cold fill,
 * a rebalance copy) yields to it, since the catalog has no row yet to compare with.
 * A weak fence (a cold fill's) is only told of newer writes: the fill does not commit its
 * older copy, and new readers do not join it. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "target/store/int.h"

struct hd_store_fence {
    struct hd_store *st;
    struct hd_store_fence *next;
    pthread_mutex_t mu; /* held across the fenced commit */
    atomic_int cancelled;
    int weak;
    char *bucket, *name;
};

int hd_store_fence_new(struct hd_store *st, const char *bucket, const char *name, int weak,
                       struct hd_store_fence **out)
{
    struct hd_store_fence *f = calloc(1, sizeof(*f));

    if (!f || !(f->bucket = strdup(bucket)) || !(f->name = strdup(name))) {
        if (f)
            free(f->bucket);
        free(f);
        return -ENOMEM;
    }
    f->st = st;
    f->weak = weak;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_lock(&st->fmu);
    f->next = st->fences;
    st->fences = f;
    atomic_fetch_add(&st->nfences, 1);
    pthread_mutex_unlock(&st->fmu);
    *out = f;
    return 0;
}

void hd_store_fence_free(struct hd_store_fence *f)
{
    struct hd_store_fence **pp;
    struct hd_store *st;

    if (!f)
        return;
    st = f->st;
    pthread_mutex_lock(&st->fmu);
    for (pp = &st->fences; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            atomic_fetch_sub(&st->nfences, 1);
            break;
        }
    pthread_mutex_unlock(&st->fmu);
    pthread_mutex_destroy(&f->mu);
    free(f->bucket);
    free(f->name);
    free(f);
}

static int on_name(const struct hd_store_fence *f, const char *bucket, const char *name)
{
    return strcmp(f->bucket, bucket) == 0 && (!name || strcmp(f->name, name) == 0);
}

int hd_store_fence_cancel(struct hd_store *st, const char *bucket, const char *name,
                          const struct hd_store_fence *own, int yield)
{
    struct hd_store_fence *f;

    if (atomic_load(&st->nfences) == 0)
        return 0; /* the common case: no deferred commit or fill anywhere */
    pthread_mutex_lock(&st->fmu);
    if (yield)
        for (f = st->fences; f; f = f->next)
            if (f != own && !f->weak && !atomic_load(&f->cancelled) && on_name(f, bucket, name)) {
                pthread_mutex_unlock(&st->fmu);
                return HD_EPRECONDITION; /* a newer write's commit is on its way */
            }
    for (f = st->fences; f; f = f->next) {
        if (f == own || !on_name(f, bucket, name))
            continue;
        pthread_mutex_lock(&f->mu); /* waits for a fenced commit in progress */
        atomic_store(&f->cancelled, 1);
        pthread_mutex_unlock(&f->mu);
    }
    pthread_mutex_unlock(&st->fmu);
    return 0;
}

int hd_store_fence_cancelled(const struct hd_store_fence *f)
{
    return atomic_load(&f->cancelled);
}

int hd_store_fence_lock(struct hd_store_fence *f)
{
    pthread_mutex_lock(&f->mu);
    if (!atomic_load(&f->cancelled))
        return 0;
    pthread_mutex_unlock(&f->mu);
    return HD_EPRECONDITION;
}

void hd_store_fence_unlock(struct hd_store_fence *f)
{
    pthread_mutex_unlock(&f->mu);
}
