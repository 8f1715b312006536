/* hd_test_http: what the unit tests that talk HTTP share: hd_http servers on 127.0.0.1:0, a
 * libcurl client that keeps the whole answer (one at a time, or several at once on a multi
 * handle), a position-addressable byte pattern, MD5 of test data, a raw-socket sender, polling
 * with a deadline and temp-directory removal. Test thread only, unless a function says so. */
#ifndef HD_TEST_HTTP_H
#define HD_TEST_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/http.h"

/* An HTTP server on 127.0.0.1 with an ephemeral port and the http.* defaults hoardd uses
 * (common/config.c), threads workers. 0 or a negative code; *port gets the bound port. */
int ht_server_start(hd_http_handler_fn handler, void *ctx, int threads, struct hd_http_server **out,
                    int *port);
/* The same, in loop mode (hd_http_cfg.loops) when loops is 1. */
/* http.timeout of the servers started from here on (default 60 s). */
extern int ht_http_timeout_s;
int ht_server_start_mode(hd_http_handler_fn handler, void *ctx, int threads, int loops,
                         struct hd_http_server **out, int *port);

/* One client transfer: the request as set up by ht_init/ht_header/ht_body, then the answer.
 * The download is aborted (curl error) once stop_after bytes arrived, when it is not 0. */
struct ht_xfer {
    void *easy; /* CURL * */
    void *hl;   /* struct curl_slist * */
    const char *up;
    size_t uplen, upoff;
    int post;
    size_t stop_after;
    char *body;
    size_t len, cap;
    char *hdrs; /* the final header block as received, "\r\n"-separated */
    size_t hlen, hcap;
    long status;
    int cc;  /* CURLcode of the transfer */
    int oom; /* a buffer could not grow */
};

/* method: GET, HEAD, PUT (body from ht_body, possibly empty), DELETE, POST. */
void ht_init(struct ht_xfer *x, const char *method, const char *url);
/* "Name: value" (curl's syntax: "Name:" removes a default header). */
void ht_header(struct ht_xfer *x, const char *line);
/* The request body (not copied: must stay valid until the transfer is done). */
void ht_body(struct ht_xfer *x, const void *p, size_t n);
/* Runs x alone; returns its CURLcode (also in x->cc). */
int ht_perform(struct ht_xfer *x);
/* Runs n transfers at once; tick(arg), when given, is called every few milliseconds while
 * they run (to act on the servers' progress). 0, or -1 if the multi handle failed. */
int ht_perform_all(struct ht_xfer **xs, size_t n, void (*tick)(void *arg), void *arg);
void ht_cleanup(struct ht_xfer *x);
/* Init, perform and keep the answer: hdrs is a NULL-terminated list of header lines (or
 * NULL), body/n the request body (PUT/POST). Returns the CURLcode. */
int ht_do(struct ht_xfer *x, const char *method, const char *url, const char *const *hdrs,
          const void *body, size_t n);
/* A response header's value (case-insensitive name) copied into out; NULL when absent. */
const char *ht_resp_header(const struct ht_xfer *x, const char *name, char *out, size_t outlen);
/* Whether the answer's body contains s. */
int ht_body_has(const struct ht_xfer *x, const char *s);

/* A byte pattern addressable by position: object `seed`'s byte at offset i. */
unsigned char ht_pat(uint64_t seed, uint64_t i);
void ht_pat_fill(void *p, uint64_t seed, uint64_t off, size_t n);
/* Whether p[0..n) is object seed's bytes from off. */
int ht_pat_equal(const void *p, uint64_t seed, uint64_t off, size_t n);

/* MD5 (OpenSSL, independent of common/cksum) as lowercase hex and as base64 (Content-MD5). */
void ht_md5_hex(const void *p, size_t n, char out[33]);
void ht_md5_b64(const void *p, size_t n, char out[25]);

/* Connects to 127.0.0.1:port and sends p[0..n) whole: the connected socket (caller closes),
 * or -1. */
int ht_raw_send(int port, const void *p, size_t n);

/* Polls cond(arg) every 10 ms until it is true or timeout_ms passed: 1 if it came true. */
int ht_wait(int (*cond)(void *arg), void *arg, int timeout_ms);

/* A fresh directory /tmp/<prefix>-XXXXXX into out (size outlen): 0 or -errno. */
int ht_tmpdir(const char *prefix, char *out, size_t outlen);
/* rm -rf path (no-op for "" or a missing path). */
void ht_rm_rf(const char *path);
/* Regular files under dir, recursively (0 when dir is missing). */
size_t ht_count_files(const char *dir);

#endif
