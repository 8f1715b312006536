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
    atomic_int refs; /* the owner's, and a canceller's while it waits (outside st->fmu) */
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
    atomic_init(&f->refs, 1);
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_lock(&st->fmu);
    f->next = st->fences;
    st->fences = f;
    atomic_fetch_add(&st->nfences, 1);
    pthread_mutex_unlock(&st->fmu);
    *out = f;
    return 0;
}

static void fence_unref(struct hd_store_fence *f)
{
    if (atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->bucket);
    free(f->name);
    free(f);
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
    fence_unref(f);
}

static int on_name(const struct hd_store_fence *f, const char *bucket, const char *name)
{
    return strcmp(f->bucket, bucket) == 0 && (!name || strcmp(f->name, name) == 0);
}

/* The fences are marked under st->fmu (so the first of two racing commits wins outright);
 * a fenced commit in progress is waited for afterwards, holding a reference but not fmu, so
 * that a slow catalog commit of one name never holds up fences (fills) of other names. */
int hd_store_fence_cancel(struct hd_store *st, const char *bucket, const char *name,
                          const struct hd_store_fence *own, int mode)
{
    struct hd_store_fence *f, *one[8], **wait = one;
    size_t n = 0, cap = sizeof(one) / sizeof(one[0]), i;

    if (atomic_load(&st->nfences) == 0)
        return 0; /* the common case: no deferred commit or fill anywhere */
    pthread_mutex_lock(&st->fmu);
    if ((mode & HD_FENCE_COMMIT) && own && atomic_load(&own->cancelled)) {
        pthread_mutex_unlock(&st->fmu);
        return HD_EPRECONDITION; /* refused anyway: it must cancel nobody */
    }
    if (mode & HD_FENCE_YIELD)
        for (f = st->fences; f; f = f->next)
            if (f != own && !f->weak && !atomic_load(&f->cancelled) && on_name(f, bucket, name)) {
                pthread_mutex_unlock(&st->fmu);
                return HD_EUNAVAIL; /* a newer write's commit is on its way */
            }
    for (f = st->fences; f; f = f->next) {
        if (f == own || !on_name(f, bucket, name))
            continue;
        /* cancelled before or not, a commit of it that passed its check may be running */
        atomic_store(&f->cancelled, 1);
        if (n == cap) { /* more than a handful at once: a bucket's worth */
            struct hd_store_fence **w = malloc(2 * cap * sizeof(*w));
            if (!w) { /* wait for this one here, as before */
                pthread_mutex_lock(&f->mu);
                pthread_mutex_unlock(&f->mu);
                continue;
            }
            memcpy(w, wait, n * sizeof(*w));
            if (wait != one)
                free(wait);
            wait = w;
            cap *= 2;
        }
        atomic_fetch_add(&f->refs, 1);
        wait[n++] = f;
    }
    pthread_mutex_unlock(&st->fmu);
    for (i = 0; i < n; i++) { /* a fenced commit that passed its check finishes first */
        pthread_mutex_lock(&wait[i]->mu);
        pthread_mutex_unlock(&wait[i]->mu);
        fence_unref(wait[i]);
    }
    if (wait != one)
        free(wait);
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
