/* store_tar: the tar index of objects in the catalog. For an object that is a tar archive,
 * tables tar_index (one row per indexed content file: member count, or why it could not be
 * indexed) and tar_members (name, data offset, size per member) of its mountpath's catalog
 * let a member be served with one ranged read and a shard's members be listed without
 * reading it. Rows are keyed by the content file, so they describe exactly the bytes of that
 * file; triggers in the schema (store_int.h) drop them with the object's row. Thread-safe,
 * blocking on disk like the rest of store.h. */
#ifndef HD_STORE_TAR_H
#define HD_STORE_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "target/store/store.h"

struct hd_tar_ent {
    char *name;
    uint64_t off, size;
};

/* Index state of the content file of m (as returned by hd_store_lookup): 0 indexed (*members
 * set), 1 not indexed yet, HD_ENOTARCHIVE when a scan found it is not an uncompressed tar
 * (the reason, as recorded, in msg), or another negative code. */
int hd_store_tar_state(struct hd_store *st, const struct hd_obj_meta *m, uint64_t *members,
                       char *msg, size_t msglen);
/* Records a scan result for the content file of bucket/name at m: ents (n) with status 0, or
 * no members with status HD_ENOTARCHIVE and msg. Nothing is recorded (returns 0) when the
 * object no longer uses that file. Duplicate names keep the last. */
int hd_store_tar_save(struct hd_store *st, const char *bucket, const char *name,
                      const struct hd_obj_meta *m, const struct hd_tar_ent *ents, size_t n,
                      int status, const char *msg);
/* Offset and size of member `member`: 0, HD_ENOSUCHMEMBER, or an error. */
int hd_store_tar_member(struct hd_store *st, const struct hd_obj_meta *m, const char *member,
                        uint64_t *off, uint64_t *size);
/* Calls fn for every member in archive order; fn returning non-zero stops (and is returned). */
typedef int (*hd_store_tar_fn)(void *arg, const char *name, uint64_t off, uint64_t size);
int hd_store_tar_list(struct hd_store *st, const struct hd_obj_meta *m, hd_store_tar_fn fn,
                      void *arg);

#endif
