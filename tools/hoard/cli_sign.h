/* cli_sign: SigV4 signing of one hoard CLI request (service "s3", UNSIGNED-PAYLOAD), with the
 * maths in common/sigv4. Stateless apart from allocation; any thread (the CLI uses the main one).
 *
 * Only the first hop of a request is signed: a redirect target (a proxy's 307 to a target)
 * trusts the proxy's own authorisation carried in the Location query, and this Authorization
 * names the first host, so cli_http sends the redirected request without any of these headers. */
#ifndef HD_CLI_SIGN_H
#define HD_CLI_SIGN_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>

#include "common/sigv4.h"
#include "tools/hoard/cli.h"

#define HD_CLI_SIGN_SERVICE "s3"
#define HD_CLI_SIGN_PAYLOAD "UNSIGNED-PAYLOAD"
#define HD_CLI_DEFAULT_REGION "us-east-1"

/* Signs `method url` at time `now`. url is exactly what libcurl is given:
 * http[s]://authority[/path][?query], path and query percent-encoded as on the wire. extra
 * holds the other headers that will be sent and must be covered (Content-Type, Range); may be
 * NULL when nextra is 0. Appends "Host", "x-amz-date", "x-amz-content-sha256" and
 * "Authorization" lines to *hdrs; the caller owns the list (and frees it on failure too:
 * lines appended before a failure stay in it). The Host line is sent as signed, so the value
 * is the one the server checks. Returns 0, HD_EBADARG (URL without a host, or an access key,
 * region or header name SigV4 cannot carry) or -ENOMEM. */
int hd_cli_sign_headers(const struct hd_cli_cred *cred, const char *method, const char *url,
                        const struct hd_kv *extra, size_t nextra, time_t now,
                        struct curl_slist **hdrs);

#endif
