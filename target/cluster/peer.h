/* peer: a target's calls to the other targets of its cluster (shard jobs, batch GET): the
 * owner of an object under the current cluster map, the URL of the object (or of one of its
 * archive members) there, and the node signature (X-Hoard-Pid/Ptime/Psig) that authorises
 * the call. Any thread. */
#ifndef HD_TARGET_PEER_H
#define HD_TARGET_PEER_H

#include <stddef.h>

struct hd_target;

/* *url (malloc'd): "<owner>/v1/objects/B/O[?archpath=M]" for the HRW owner of bucket/name;
 * *self says whether that owner is this target. HD_ENOSUCHKEY when there is no cluster map
 * (standalone: what is not held here does not exist); HD_EUNAVAIL when the owner is down or
 * no target is eligible (msg says which). */
int hd_peer_object_url(struct hd_target *t, const char *bucket, const char *name,
                       const char *archpath, char **url, int *self, char *msg, size_t msglen);
/* Node signature headers for METHOD url as "Name: value" strings (malloc'd array of malloc'd
 * strings, for struct hd_tar_src). 0 or -ENOMEM. */
int hd_peer_sign(struct hd_target *t, const char *method, const char *url, char ***hdrs, size_t *n);

#endif
