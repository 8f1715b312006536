/* tls: loading the node's credentials (certificate, key, CA) with the checks that stop a
 * misconfigured node at start, verification of a chain against a CA, and a reload that keeps
 * the credentials in use when the new files are bad. Certificates come from
 * deploy/local/mkcerts.sh (openssl), two CAs in two directories. */
#include "test/unit/hd_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/tls.h"

static char dir[] = "/tmp/hd-tls-XXXXXX";

static const char *path(const char *sub, const char *name)
{
    static char buf[4][256];
    static int k;
    char *b = buf[k++ & 3];

    snprintf(b, 256, "%s/%s/%s", dir, sub, name);
    return b;
}

static void cleanup(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

HD_SUITE(tls)
{
    struct hd_tls *t = NULL;
    char err[512], desc[600], cmd[600];
    const char *why = NULL;
    char *a, *ca, *cb;
    size_t alen, calen, cblen;

    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    hd_test_at_end(cleanup);
    snprintf(cmd, sizeof(cmd),
             "bash ../../deploy/local/mkcerts.sh %s/a n1 n2 >/dev/null && "
             "bash ../../deploy/local/mkcerts.sh %s/b n1 >/dev/null && "
             "printf 'not a pem\\n' > %s/a/junk.pem",
             dir, dir, dir);
    if (system(cmd) != 0) {
        CHECK(!"mkcerts.sh failed (openssl missing?)");
        return;
    }

    /* the good case */
    CHECK_EQ_INT(hd_tls_new(path("a", "n1.pem"), path("a", "n1.key"), path("a", "ca.pem"), 1, &t,
                            err, sizeof(err)),
                 0);
    CHECK(t != NULL);
    hd_tls_describe(t, desc, sizeof(desc));
    CHECK(strstr(desc, "CN=n1") != NULL && strstr(desc, "not after") != NULL);
    CHECK(hd_tls_mhd_trust(t) != NULL); /* client_auth: the server asks for certificates */
    CHECK(!hd_tls_on());
    hd_tls_use(t);
    CHECK(hd_tls_on() && hd_tls_client_auth());
    CHECK_EQ_STR(hd_tls_scheme(), "https");
    CHECK_EQ_INT(hd_tls_peer_ok(NULL, &why), -1); /* not a TLS connection */
    hd_tls_use(NULL);
    CHECK_EQ_STR(hd_tls_scheme(), "http");

    /* reload: n2's files in n1's place are taken; junk leaves n2's in use */
    snprintf(cmd, sizeof(cmd), "cp %s/a/n2.pem %s/a/n1.pem && cp %s/a/n2.key %s/a/n1.key", dir, dir,
             dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK_EQ_INT(hd_tls_reload(t, err, sizeof(err)), 0);
    hd_tls_describe(t, desc, sizeof(desc));
    CHECK(strstr(desc, "CN=n2") != NULL);
    snprintf(cmd, sizeof(cmd), "cp %s/a/junk.pem %s/a/n1.key", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK(hd_tls_reload(t, err, sizeof(err)) < 0);
    CHECK(strstr(err, "tls.key") != NULL);
    hd_tls_describe(t, desc, sizeof(desc));
    CHECK(strstr(desc, "CN=n2") != NULL);
    hd_tls_free(t);
    t = NULL;

    /* what stops a node at start, each with the file named */
    CHECK(hd_tls_new(path("a", "n2.pem"), path("b", "n1.key"), "", 0, &t, err, sizeof(err)) < 0);
    CHECK(t == NULL && strstr(err, "does not belong") != NULL);
    CHECK(hd_tls_new(path("b", "n1.pem"), path("b", "n1.key"), path("a", "ca.pem"), 0, &t, err,
                     sizeof(err)) < 0);
    CHECK(strstr(err, "does not verify against tls.ca") != NULL);
    CHECK(hd_tls_new(path("a", "junk.pem"), path("a", "n2.key"), "", 0, &t, err, sizeof(err)) < 0);
    CHECK(strstr(err, "no PEM certificate") != NULL);
    CHECK(hd_tls_new(path("a", "n2.pem"), path("a", "missing.key"), "", 0, &t, err, sizeof(err)) <
          0);
    CHECK(strstr(err, "missing.key") != NULL);
    CHECK(hd_tls_new(path("a", "n2.pem"), path("a", "n2.key"), "", 1, &t, err, sizeof(err)) < 0);
    CHECK(strstr(err, "tls.client_auth needs tls.ca") != NULL);
    CHECK(hd_tls_new(path("a", "n2.pem"), "", "", 0, &t, err, sizeof(err)) < 0);
    /* no CA: the certificate is served as it is */
    CHECK_EQ_INT(hd_tls_new(path("b", "n1.pem"), path("b", "n1.key"), "", 0, &t, err, sizeof(err)),
                 0);
    CHECK(hd_tls_mhd_trust(t) == NULL);
    hd_tls_free(t);

    /* chains against CAs */
    a = hd_test_slurp(path("a", "n2.pem"), &alen);
    ca = hd_test_slurp(path("a", "ca.pem"), &calen);
    cb = hd_test_slurp(path("b", "ca.pem"), &cblen);
    CHECK(a && ca && cb);
    if (a && ca && cb) {
        CHECK_EQ_INT(hd_tls_verify_pem(a, alen, ca, calen, &why), 0);
        CHECK(hd_tls_verify_pem(a, alen, cb, cblen, &why) < 0 && why != NULL);
        CHECK(hd_tls_verify_pem("junk", 4, ca, calen, &why) < 0);
        CHECK(hd_tls_verify_pem(a, alen, "junk", 4, &why) < 0);
        CHECK(hd_tls_verify_pem(ca, calen, ca, calen, &why) == 0); /* the CA itself */
    }
    free(a);
    free(ca);
    free(cb);
}
