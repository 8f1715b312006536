/* cli_http: the hoard CLI's HTTP client over one reused libcurl easy handle (keep-alive across
 * pages): SigV4-signed requests (cli_sign), streaming uploads/downloads with MD5, progress
 * bar, timeouts, redirects (proxies answer 307; followed unsigned, see cli_sign.h), and the one
 * place that turns a failure into an error line and exit code. Main thread only. */
#ifndef HD_CLI_HTTP_H
#define HD_CLI_HTTP_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/buf.h"
#include "tools/hoard/cli.h"

/* Transport failure (connect, DNS, timeout, reset, bad TLS): the message is in resp->curl_err.
 * Between -errno and the project codes of common/errors.h, so it collides with neither. */
#define HD_CLI_ECURL (-4200)
/* The request could not be signed (bad access key or region); message in resp->curl_err. */
#define HD_CLI_ESIGN (-4201)
/* A redirect asked for an upload again that cannot be rewound (stdin, after some of it was
 * sent); the redirect's URL is in resp->curl_err. */
#define HD_CLI_ENOREWIND (-4202)

#define HD_CLI_MAX_REDIRS 5

#define HD_CLI_PROGRESS_MIN ((uint64_t)8 << 20) /* transfers above this size show progress */
#define HD_CLI_CONNECT_TIMEOUT_S 10L
#define HD_CLI_LOW_SPEED_BPS 1024L          /* abort when slower than this ... */
#define HD_CLI_LOW_SPEED_TIME_S 60L         /* ... for this long */
#define HD_CLI_BODY_MAX ((size_t)256 << 20) /* cap on a buffered (JSON) response body */

struct hd_cli_req {
    const char *method;  /* GET HEAD PUT POST DELETE */
    const char *path;    /* encoded path and query, appended to cli->endpoint */
    FILE *upload;        /* PUT or POST body, read to EOF; NULL for none */
    int64_t upload_size; /* -1 when unknown (sent chunked; PUT only) */
    FILE *download;      /* sink for a 2xx body; NULL buffers it in resp->body */
    const char *content_type;
    const char *body; /* POST/PATCH body (a NUL-terminated text, e.g. JSON); NULL: empty */
    int hash;         /* compute the MD5 of the uploaded or downloaded bytes */
    /* When set, body bytes are added to it as they move (and taken back when an upload is
     * rewound for a redirect): one progress total shared by parallel transfers. */
    _Atomic uint64_t *moved;
    int discard_success; /* abort at once on a 2xx body (used to fetch error details) */
};

struct hd_cli_hdr {
    char *name;
    char *value;
};

struct hd_cli_resp {
    long status;             /* final HTTP status (after redirects); 0 when none */
    struct hd_buf body;      /* buffered body: always for non-2xx, for 2xx without a sink */
    struct hd_cli_hdr *hdrs; /* headers of the final response */
    size_t nhdrs;
    uint64_t bytes;     /* payload bytes uploaded, or written to the sink */
    char md5[33];       /* lowercase hex MD5 of those bytes when req->hash */
    int local_err;      /* -errno when reading the upload or writing the sink failed */
    int curl_code;      /* CURLcode of the last transfer */
    char curl_err[256]; /* CURL_ERROR_SIZE */
};

void hd_cli_resp_init(struct hd_cli_resp *rs);
void hd_cli_resp_cleanup(struct hd_cli_resp *rs);
/* Case-insensitive lookup in the final response's headers; NULL when absent. */
const char *hd_cli_resp_header(const struct hd_cli_resp *rs, const char *name);

/* Performs one request, signed when cli->cred has an access key, following up to
 * HD_CLI_MAX_REDIRS redirects (301 302 303 307 308, method and body kept; the redirected hops
 * are sent without Authorization). Returns 0 when a response arrived (any status: check
 * rs->status), HD_CLI_ECURL on transport failure or too many redirects, HD_CLI_ESIGN,
 * HD_CLI_ENOREWIND, -EINTR when interrupted, or rs->local_err. rs must be initialised; it is
 * reset first so it can be reused. */
int hd_cli_http_do(struct hd_cli *cli, const struct hd_cli_req *rq, struct hd_cli_resp *rs);
void hd_cli_http_free(struct hd_cli_http *h);

/* Extracts the server's error code and message: the native JSON error body
 * {"code":..,"message":..}, else "HTTP <status>" and the body's first line. */
void hd_cli_resp_error(const struct hd_cli_resp *rs, char *code, size_t codelen, char *msg,
                       size_t msglen);

/* Prints one error line for a failed request, "hoard: <what>: <code>: <message>" (or the
 * transport error naming the endpoint) and returns the exit code: HD_CLI_EXIT_API for an
 * HTTP error status or a local error, HD_CLI_EXIT_CONN for transport failures,
 * HD_CLI_EXIT_INTR when interrupted. A 403 to an unsigned request says how to give
 * credentials. Call only when rc != 0 or rs->status >= 300. */
int hd_cli_report(struct hd_cli *cli, const char *what, int rc, const struct hd_cli_resp *rs);

/* A request whose 2xx answer is a JSON object, parsed into *out (caller decrefs). body: JSON
 * text sent as application/json with POST (NULL: none). HD_CLI_EXIT_OK, or the exit code after
 * printing the error line (hd_cli_report; a 2xx body that is not a JSON object is
 * "unexpected response"). */
int hd_cli_json_do(struct hd_cli *cli, const char *method, const char *path, const char *body,
                   const char *what, json_t **out);

#endif
