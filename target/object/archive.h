/* archive: tar members of objects. GET/HEAD /v1/objects/B/O?archpath=NAME (and S3 GetObject
 * with ?archpath=NAME) serve one member of a tar object with a single ranged read of its
 * content file (sendfile), Range applying inside the member; ?members lists the members as
 * JSON. The member table comes from the catalog (store_tar.h): written right after hoard
 * builds a shard, or made on first access for a tar a user uploaded. Compressed tars and zips
 * have no member table: they are read in order (decompressed) on the target's pool, and what
 * is answered is built in memory (64 MiB at most). HTTP worker threads (and job and batch
 * threads for hd_arch_index, hd_arch_packed_member); blocking on local disk only. */
#ifndef HD_TARGET_ARCHIVE_H
#define HD_TARGET_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/http.h"
#include "target/store/store.h"

/* 1 when r asks for a member or the member list (?archpath / ?members). */
int hd_arch_wanted(const struct hd_req *r);
/* Answers r for the open object bucket/key (m; *fd open, or -1 after a HEAD lookup). Takes
 * *fd when the response does (sets it to -1). A compressed tar or a zip is read in order
 * (no member table): on pool when given (r then becomes a parked call: only at dispatch,
 * before r has handlers of its own), else on this thread. */
struct hd_pool;
void hd_arch_serve(struct hd_req *r, struct hd_store *st, struct hd_pool *pool, const char *bucket,
                   const char *key, const struct hd_obj_meta *m, int *fd, int head);
/* A member of a compressed tar or a zip (fd, size bytes), for readers of byte ranges: 1 with
 * its bytes in *mfd (an anonymous file of *len bytes, the caller's), 0 when fd holds no such
 * archive (a plain tar: use the member table), or HD_ENOSUCHMEMBER, HD_ETOOLARGE (over
 * 64 MiB), HD_ENOTARCHIVE (msg says why), another error. Any thread; it decompresses. */
int hd_arch_packed_member(int fd, uint64_t size, const char *member, int *mfd, uint64_t *len,
                          char *msg, size_t msglen);
/* Makes sure the catalog holds the member table of bucket/key's content file (m, fd open on
 * it): scans the tar when it is not indexed yet. 0 (*members set when not NULL),
 * HD_ENOTARCHIVE with the reason in msg, or another error. */
int hd_arch_index(struct hd_store *st, const char *bucket, const char *key,
                  const struct hd_obj_meta *m, int fd, uint64_t *members, char *msg, size_t msglen);

#endif
