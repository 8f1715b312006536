/* core: the proxy's held BMD as the other folders ask it, and the loop's wake-up. Any
 * thread; nothing blocks. */
#include "proxy/core/core.h"

#include <string.h>

#include "common/errors.h"

int hd_proxy_bucket_known(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    int rc = hd_bmd_find(b, bucket) ? 0 : HD_ENOSUCHBUCKET;

    hd_bmd_unref(b);
    return rc;
}

void hd_proxy_wake(struct hd_proxy *p)
{
    hd_ticker_wake(&p->ticker);
}

int hd_proxy_bucket_cloud(struct hd_proxy *p, const char *bucket)
{
    struct hd_bmd *b = hd_smap_state_bmd(p->cs);
    const struct hd_bmd_bucket *e = hd_bmd_find(b, bucket);
    int yes = e && strcmp(e->provider, "aws") == 0;

    hd_bmd_unref(b);
    return yes;
}
