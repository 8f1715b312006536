/* archive: tar members of objects. GET/HEAD /v1/objects/B/O?archpath=NAME (and S3 GetObject
 * with ?archpath=NAME) serve one member of a tar object with a single ranged read of its
 * content file (sendfile), Range applying inside the member; ?members lists the members as
 * JSON. The member table comes from the catalog (store_tar.h): written right after hoard
 * builds a shard, or made on first access for a tar a user uploaded. HTTP worker threads (and
 * job threads for hd_arch_index); blocking on local disk only. */
#ifndef HD_TARGET_ARCHIVE_H
#define HD_TARGET_ARCHIVE_H

#include <stddef.h>

#include "common/http.h"
#include "target/store/store.h"

/* 1 when r asks for a member or the member list (?archpath / ?members). */
int hd_arch_wanted(const struct hd_req *r);
/* Answers r for the open object bucket/key (m; *fd open, or -1 after a HEAD lookup). Takes
 * *fd when the response does (sets it to -1). */
void hd_arch_serve(struct hd_req *r, struct hd_store *st, const char *bucket, const char *key,
                   const struct hd_obj_meta *m, int *fd, int head);
/* Makes sure the catalog holds the member table of bucket/key's content file (m, fd open on
 * it): scans the tar when it is not indexed yet. 0 (*members set when not NULL),
 * HD_ENOTARCHIVE with the reason in msg, or another error. */
int hd_arch_index(struct hd_store *st, const char *bucket, const char *key,
                  const struct hd_obj_meta *m, int fd, uint64_t *members, char *msg, size_t msglen);

#endif
