#include "tools/hoard/cli_sign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "common/buf.h"
#include "common/errors.h"

#define SIGN_MAX_EXTRA 8

/* The Host header for url: host, plus ":port" unless it is the scheme's default (what curl
 * itself would send). Heap string in *out. */
static int host_of(const char *url, char **out)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    CURLUcode uc;
    struct hd_buf b;
    int rc = -ENOMEM;

    *out = NULL;
    hd_buf_init(&b);
    if (!u)
        return -ENOMEM;
    uc = curl_url_set(u, CURLUPART_URL, url, CURLU_PATH_AS_IS);
    if (uc == CURLUE_OUT_OF_MEMORY)
        goto out;
    rc = HD_EBADARG;
    if (uc != CURLUE_OK || curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
        goto out;
    uc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_NO_DEFAULT_PORT);
    if (uc != CURLUE_OK && uc != CURLUE_NO_PORT)
        goto out;
    hd_buf_puts(&b, host);
    if (port)
        hd_buf_printf(&b, ":%s", port);
    rc = b.oom ? -ENOMEM : 0;
    if (rc == 0)
        *out = hd_buf_steal(&b, NULL);
out:
    hd_buf_cleanup(&b);
    curl_free(port);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

/* Appends "name: value" to *hdrs. */
static int add_line(struct curl_slist **hdrs, const char *name, const char *value)
{
    struct curl_slist *n;
    struct hd_buf b;

    hd_buf_init(&b);
    hd_buf_printf(&b, "%s: %s", name, value);
    n = b.oom ? NULL : curl_slist_append(*hdrs, b.data);
    hd_buf_cleanup(&b);
    if (!n)
        return -ENOMEM;
    *hdrs = n;
    return 0;
}

int hd_cli_sign_headers(const struct hd_cli_cred *cred, const char *method, const char *url,
                        const struct hd_kv *extra, size_t nextra, time_t now,
                        struct curl_slist **hdrs)
{
    struct hd_kv h[3 + SIGN_MAX_EXTRA];
    struct hd_sigv4_sign_in in;
    const char *auth, *q;
    char *host = NULL, *path = NULL;
    char amz_date[17];
    struct hd_buf authz;
    size_t n = 0, i, plen;
    int rc;

    hd_buf_init(&authz);
    if (!cred || !cred->access_key || !cred->secret_key || nextra > SIGN_MAX_EXTRA ||
        !(auth = strstr(url, "://")))
        return HD_EBADARG;
    rc = host_of(url, &host);
    if (rc < 0)
        goto out;
    /* Path and query exactly as libcurl sends them (CURLOPT_PATH_AS_IS; ours are already
     * percent-encoded, so curl has nothing left to encode). */
    auth += 3;
    auth += strcspn(auth, "/?#");
    plen = strcspn(auth, "?#");
    q = auth[plen] == '?' ? auth + plen + 1 : "";
    path = plen ? strndup(auth, plen) : strdup("/");
    if (!path) {
        rc = -ENOMEM;
        goto out;
    }
    hd_sigv4_amz_date(now, amz_date);

    h[n++] = (struct hd_kv){"host", host};
    h[n++] = (struct hd_kv){"x-amz-date", amz_date};
    h[n++] = (struct hd_kv){"x-amz-content-sha256", HD_CLI_SIGN_PAYLOAD};
    for (i = 0; i < nextra; i++)
        h[n++] = extra[i];

    memset(&in, 0, sizeof(in));
    in.method = method;
    in.path = path;
    in.query = q;
    in.headers = h;
    in.nheaders = n;
    in.access_key = cred->access_key;
    in.secret = cred->secret_key;
    in.region = cred->region && *cred->region ? cred->region : HD_CLI_DEFAULT_REGION;
    in.service = HD_CLI_SIGN_SERVICE;
    in.amz_date = amz_date;
    in.payload_hash = HD_CLI_SIGN_PAYLOAD;
    rc = hd_sigv4_sign(&in, &authz, NULL);
    if (rc < 0)
        goto out;
    if ((rc = add_line(hdrs, "Host", host)) < 0 ||
        (rc = add_line(hdrs, "x-amz-date", amz_date)) < 0 ||
        (rc = add_line(hdrs, "x-amz-content-sha256", HD_CLI_SIGN_PAYLOAD)) < 0 ||
        (rc = add_line(hdrs, "Authorization", authz.data)) < 0)
        goto out;
out:
    hd_buf_cleanup(&authz);
    free(path);
    free(host);
    return rc;
}
