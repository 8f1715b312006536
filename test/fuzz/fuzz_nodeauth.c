/* libFuzzer driver for node-signature checks (common/nodeauth). The input is split on '\n'
 * into a method, a raw URI and header lines "Name: value"; the request is verified by a node
 * that knows two senders. Whatever the bytes, verification must not crash and must not accept
 * a request unless its MAC matches: to make the accepting path reachable, a line "SIGN" makes
 * the driver sign the request first (so the mutations then exercise the checks after the
 * MAC: nonce cache, body hash). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/http.h"
#include "common/nodeauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int known(void *arg, const char *id)
{
    (void)arg;
    return strcmp(id, "p1") == 0 || strcmp(id, "t2") == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct hd_nodeauth *p1, *t1;
    struct hd_kv h[32];
    struct hd_req r;
    struct hd_nodesig sig;
    struct hd_nodeauth_who who;
    char *buf, *line, *save = NULL, *method = NULL, *uri = NULL;
    const char *why;
    size_t n = 0, i;
    int sign = 0, rc;

    if (!p1 && (hd_nodeauth_new("fuzz-secret", "p1", &p1) < 0 ||
                hd_nodeauth_new("fuzz-secret", "t1", &t1) < 0))
        abort();
    if (!(buf = malloc(size + 1)))
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (line = strtok_r(buf, "\n", &save); line && n < 26; line = strtok_r(NULL, "\n", &save)) {
        char *c;
        if (!method) {
            method = line;
        } else if (!uri) {
            uri = line;
        } else if (strcmp(line, "SIGN") == 0) {
            sign = 1;
        } else if ((c = strchr(line, ':'))) {
            *c = '\0';
            h[n].k = line;
            h[n].v = c[1] == ' ' ? c + 2 : c + 1;
            n++;
        }
    }
    /* the redirect capability's query (hd_nodeauth_psig_query): the client's bytes lose pid,
     * ptime, psig, psv and empty parameters, keep the rest in order, and normalising the result
     * again changes nothing; a capability signed for it verifies against it with any of those
     * parameters added back */
    if (uri) {
        struct hd_buf q1, q2;
        const char *qs = strchr(uri, '?') ? strchr(uri, '?') + 1 : uri;
        char ps[65];
        hd_buf_init(&q1);
        hd_buf_init(&q2);
        if (hd_nodeauth_psig_query(qs, &q1) == 0 && hd_nodeauth_psig_query(q1.data, &q2) == 0) {
            if (q1.len != q2.len || (q1.len && memcmp(q1.data, q2.data, q1.len) != 0) ||
                (q1.len &&
                 (q1.data[0] == '&' || q1.data[q1.len - 1] == '&' || strstr(q1.data, "&&"))))
                abort();
            if (hd_nodeauth_psig(p1, "GET", "/b/o", qs, 4102444800LL, "t1", NULL, NULL, ps) == 0) {
                struct hd_buf back;
                hd_buf_init(&back);
                hd_buf_printf(&back, "pid=p1&%s&ptime=1&psig=x", q1.len ? q1.data : "");
                if (!back.oom && hd_nodeauth_psig_check(t1, "p1", "GET", "/b/o", back.data,
                                                        4102444800LL, NULL, NULL, ps) != 0)
                    abort();
                hd_buf_cleanup(&back);
            }
        }
        hd_buf_cleanup(&q1);
        hd_buf_cleanup(&q2);
    }
    if (method && uri) {
        if (sign && hd_nodeauth_sign(p1, method, uri, "t1", NULL, h, n, &sig) == 0)
            for (i = 0; i < sig.n && n < 32; i++)
                h[n++] = sig.kv[i];
        memset(&r, 0, sizeof(r));
        r.method = method;
        r.raw_uri = uri;
        r.content_length = -1;
        r.hdrs = h;
        r.nhdrs = n;
        rc = hd_nodeauth_verify(t1, &r, HD_NA_ANY_TO, known, NULL, &who, &why);
        if (rc == 0 && strcmp(who.sender, "p1") != 0 && strcmp(who.sender, "t2") != 0)
            abort(); /* accepted a sender it does not know */
        if (rc < 0 && !why)
            abort(); /* every refusal says why */
    }
    free(buf);
    return 0;
}
