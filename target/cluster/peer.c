#include "target/cluster/peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/hrw.h"
#include "common/httputil.h"
#include "common/smap.h"
#include "target/cluster/cluster.h"
#include "target/api/internal.h"

int hd_peer_object_url(struct hd_target *t, const char *bucket, const char *name,
                       const char *archpath, char **url, int *self, char *msg, size_t msglen)
{
    struct hd_smap *s = hd_tcluster_smap(t->cl);
    const struct hd_node *owner = NULL;
    struct hd_bucket_info bi;
    struct hd_buf u;
    int rc;

    *url = NULL;
    hd_buf_init(&u);
    if (!s) { /* standalone: what is not here does not exist */
        snprintf(msg, msglen, "%s/%s: no such object", bucket, name);
        rc = HD_ENOSUCHKEY;
        goto out;
    }
    memset(&bi, 0, sizeof(bi));
    hd_store_bucket_get(t->st, bucket, &bi);
    hd_hrw_uname(&u,
                 strcmp(bi.provider, "aws") == 0 || strcmp(bi.provider, "s3") == 0 ? "aws" : "ais",
                 NULL, bucket, name);
    rc = u.oom ? -ENOMEM : hd_smap_owner(s, u.data, u.len, &owner);
    if (rc < 0) {
        snprintf(msg, msglen, "%s/%s: %s", bucket, name,
                 owner ? "its owner is down" : "no target is available");
        goto out;
    }
    *self = strcmp(owner->id, hd_tcluster_id(t->cl)) == 0;
    hd_buf_reset(&u);
    hd_buf_printf(&u, "%s/v1/objects/", owner->url);
    hd_uri_encode(&u, bucket, strlen(bucket), 0);
    hd_buf_puts(&u, "/");
    hd_uri_encode(&u, name, strlen(name), 1);
    if (archpath) {
        hd_buf_puts(&u, "?archpath=");
        hd_uri_encode(&u, archpath, strlen(archpath), 0);
    }
    if (u.oom) {
        rc = -ENOMEM;
        goto out;
    }
    *url = hd_buf_steal(&u, NULL);
out:
    hd_buf_cleanup(&u);
    hd_smap_unref(s);
    return rc;
}

int hd_peer_sign(struct hd_target *t, const char *method, const char *url, char ***hdrs, size_t *n)
{
    char path[4096], psig[HD_SMAP_SIG_LEN], line[3][256];
    long long ptime = (long long)time(NULL) + HD_SMAP_PSIG_TTL;
    char **v;
    size_t i;

    hd_smap_url_path(url, path, sizeof(path));
    hd_smap_psig(hd_tcluster_secret(t->cl), method, path, ptime, psig);
    snprintf(line[0], sizeof(line[0]), "X-Hoard-Pid: %s", hd_tcluster_id(t->cl));
    snprintf(line[1], sizeof(line[1]), "X-Hoard-Ptime: %lld", ptime);
    snprintf(line[2], sizeof(line[2]), "X-Hoard-Psig: %s", psig);
    if (!(v = calloc(3, sizeof(*v))))
        return -ENOMEM;
    for (i = 0; i < 3; i++) {
        if (!(v[i] = strdup(line[i]))) {
            while (i--)
                free(v[i]);
            free(v);
            return -ENOMEM;
        }
    }
    *hdrs = v;
    *n = 3;
    return 0;
}
