/* fan: calls one path on every live target of an smap in parallel (proxy-signed), for
 * jobs, listings and bucket-wide calls. Blocks the calling thread (bounded by total_ms). */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/httpc.h"

void hd_proxy_fan_cleanup(struct hd_proxy_fan *f)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        hd_httpc_call_cleanup(&f->calls[i]);
    free(f->calls);
    free(f->sigs);
    free(f->urls);
    free(f->nodes);
    memset(f, 0, sizeof(*f));
}

int hd_proxy_fan_out(struct hd_proxy *p, struct hd_smap *s, const char *method, const char *path,
                     const char *body, int all, long total_ms, struct hd_proxy_fan *f)
{
    size_t i, cap = s->n ? s->n : 1;

    memset(f, 0, sizeof(*f));
    f->calls = calloc(cap, sizeof(*f->calls));
    f->sigs = calloc(cap, sizeof(*f->sigs));
    f->urls = calloc(cap, sizeof(*f->urls));
    f->nodes = calloc(cap, sizeof(*f->nodes));
    if (!f->calls || !f->sigs || !f->urls || !f->nodes) {
        hd_proxy_fan_cleanup(f);
        return -ENOMEM;
    }
    for (i = 0; i < s->n; i++) {
        const struct hd_node *nd = &s->nodes[i];
        size_t k = f->n;
        if (nd->type != HD_NODE_TARGET || nd->down || (nd->flags && !all))
            continue;
        snprintf(f->urls[k], sizeof(f->urls[k]), "%s%s", nd->url, path);
        hd_httpc_call_init(&f->calls[k], method, f->urls[k]);
        hd_proxy_sign(p, method, f->urls[k], &f->sigs[k]);
        f->calls[k].hdrs = f->sigs[k].kv;
        f->calls[k].nhdrs = f->sigs[k].n;
        if (body) {
            f->calls[k].body = body;
            f->calls[k].blen = strlen(body);
            f->calls[k].ctype = "application/json";
        }
        f->calls[k].total_ms = total_ms;
        f->nodes[k] = nd;
        f->n++;
    }
    hd_httpc_run_all(f->calls, f->n, 0);
    return 0;
}

json_t *hd_proxy_call_json(const struct hd_httpc_call *c)
{
    if (c->rc < 0 || !c->resp.data)
        return NULL;
    return json_loadb(c->resp.data, c->resp.len, 0, NULL);
}
