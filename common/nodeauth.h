/* nodeauth: signatures on every request one hoard node sends another (joins, heartbeats,
 * metasync, votes, fan-outs, the relay, rebalance, peer reads). Each node signs with a key of
 * its own, derived from the cluster secret and its node id (common/kdf.h), over
 *
 *   HOARD1-HMAC-SHA256 \n METHOD \n path?query as sent \n date \n nonce \n
 *   body SHA-256 (hex, or UNSIGNED-PAYLOAD) \n sender id \n recipient id \n
 *   every other X-Hoard-* header as "lowercase-name:value\n", sorted
 *
 * sent as X-Hoard-Node, X-Hoard-Date (unix seconds), X-Hoard-Nonce (128 random bits, hex),
 * X-Hoard-Content-Sha256 and X-Hoard-Signature. The receiver checks the date against a skew
 * window, that it is the recipient, that the sender is a node it knows (or, for a join, the
 * node the body describes), the MAC, then remembers the nonce for as long as the date stays
 * valid, and the HTTP layer checks the body against the signed hash before the handler sees
 * its end (common/http.c). A captured request cannot be replayed, moved to another body,
 * path, receiver or sender, nor given other X-Hoard-* headers.
 *
 * What it does not do: stop a node that holds the cluster secret from signing as another
 * node (every node can derive every key); mutual TLS with per-node certificates binds that
 * identity (docs/security.md). UNSIGNED-PAYLOAD is for bodies the sender streams without
 * knowing their hash (a client's PUT through the relay): the nonce still stops a replay, and
 * TLS stops an on-path rewrite.
 *
 * Thread-safe. Cost with the key cached: one HMAC-SHA256 (about a microsecond) plus a hash
 * table insert under a striped mutex. */
#ifndef HD_NODEAUTH_H
#define HD_NODEAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/http.h"

#define HD_NODEAUTH_SKEW_S 30 /* |now - date| allowed; a nonce is kept 3 x this */
#define HD_NODEAUTH_ID_MAX 64
#define HD_NODEAUTH_UNSIGNED "UNSIGNED-PAYLOAD"
#define HD_NODEAUTH_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HD_NODEAUTH_ANY "*" /* recipient of a join: the sender does not know the primary's id */
#define HD_NODEAUTH_MAX_NONCES (8u << 20) /* remembered nonces; past this, 503 */
#define HD_NODEAUTH_SECRETS 3             /* accepted at once (a rotation) */

struct hd_nodeauth;

/* secret: the cluster secret ("" = no signatures: signing adds only X-Hoard-Node and
 * verification accepts any sender, the dev mode main() allows without auth.keys), or a
 * comma-separated list of up to HD_NODEAUTH_SECRETS during a rotation: the first signs, any
 * verifies (docs/security.md). self: this node's id. 0 or -ENOMEM/-EINVAL. */
int hd_nodeauth_new(const char *secret, const char *self, struct hd_nodeauth **out);
void hd_nodeauth_free(struct hd_nodeauth *na);
/* Whether a secret is set (signatures are made and checked). */
int hd_nodeauth_on(const struct hd_nodeauth *na);
const char *hd_nodeauth_self(const struct hd_nodeauth *na);

/* The headers of one signed request. kv points into the struct. */
struct hd_nodesig {
    struct hd_kv kv[5];
    size_t n;
    char date[24];
    char nonce[33];
    char sha[65];
    char sig[65];
};

/* Signs METHOD url (absolute "http://host:port/path?query", or "/path?query": exactly what
 * goes on the request line) for recipient `to`, with body_sha256 the hex SHA-256 of the
 * body (NULL: HD_NODEAUTH_UNSIGNED) and hdrs the request's other headers (its X-Hoard-* ones
 * are signed). 0, or -ENOMEM/-EIO (out->n is then 0). */
int hd_nodeauth_sign(struct hd_nodeauth *na, const char *method, const char *url, const char *to,
                     const char *body_sha256, const struct hd_kv *hdrs, size_t nhdrs,
                     struct hd_nodesig *out);
/* The same, for a libcurl header list: signs over the X-Hoard-* lines already in h and
 * appends the signature lines. Returns the list, or NULL on failure (h is then freed). */
struct curl_slist;
struct curl_slist *hd_nodeauth_sign_curl(struct hd_nodeauth *na, struct curl_slist *h,
                                         const char *method, const char *url, const char *to,
                                         const char *body_sha256);
/* The signature lines as "Name: value" strings (malloc'd array of malloc'd strings, the form
 * common/tarstream.h takes), body_sha256 as in hd_nodeauth_sign. 0 or -ENOMEM/-EIO. */
int hd_nodeauth_sign_lines(struct hd_nodeauth *na, const char *method, const char *url,
                           const char *to, const char *body_sha256, char ***lines, size_t *n);

/* The redirect capability: a proxy that answers 307 appends pid=<its id>&ptime=<expiry>&
 * psig=<HMAC(K_pid, "HOARD1-PSIG\n" METHOD "\n" raw path "\n" ptime "\n" target id
 * ["\ncopy-source:" x-amz-copy-source] ["\nsmap:" psv] ["\nquery:" query])> to the Location (and psv=<term>.<version>
 * of the cluster map it routed by, when it has one), and the target (the recipient)
 * checks it. Unlike a request signature it may be used more than once until it expires (a
 * client may follow the same redirect again): it is a bearer token for one method on one path
 * at one target, like a presigned URL. copy_src (NULL or "": none) is the request's
 * x-amz-copy-source, which the proxy authorised: without it in the MAC a client could add a
 * copy source the proxy never saw to the redirected PUT and read any bucket through it.
 * smapv (NULL or "": none) is psv: signed, so a client cannot make a target wait for a map
 * that does not exist. query (NULL: none) is the Location's raw query: the MAC covers it as
 * hd_nodeauth_psig_query gives it (["\nquery:" QUERY] when not empty), so a client cannot add
 * a subresource (?acl, ?tagging, response-*) to a capability the proxy gave for another call. */
int hd_nodeauth_psig(struct hd_nodeauth *na, const char *method, const char *raw_path,
                     const char *query, long long ptime, const char *to, const char *copy_src,
                     const char *smapv, char out[65]);
/* The part of raw_query a redirect capability covers, into out: its parameters but pid,
 * ptime, psig and psv, in order, empty ones left out ("a=1&b"). 0 or -ENOMEM. */
int hd_nodeauth_psig_query(const char *raw_query, struct hd_buf *out);
/* 0 when sig is pid's signature for us; HD_EACCESS otherwise (an expired ptime included:
 * HD_EEXPIRED). copy_src: the x-amz-copy-source of the request that carries it; smapv: its
 * psv. */
int hd_nodeauth_psig_check(struct hd_nodeauth *na, const char *pid, const char *method,
                           const char *raw_path, const char *query, long long ptime,
                           const char *copy_src, const char *smapv, const char *sig);

/* hex SHA-256 of a body (an empty one for len 0). */
void hd_nodeauth_sha256_hex(const void *body, size_t len, char hex[65]);
/* hex SHA-256 of len bytes of fd from off (pread; the file position is unchanged). 0, or a
 * negative errno (-EIO for a file shorter than len). */
int hd_nodeauth_sha256_fd(int fd, uint64_t off, uint64_t len, char hex[65]);

/* The sender of a verified request. */
struct hd_nodeauth_who {
    char sender[HD_NODEAUTH_ID_MAX + 1];
    int any_recipient; /* signed for HD_NODEAUTH_ANY (a join) */
};
/* Flags of hd_nodeauth_verify. */
#define HD_NA_ANY_TO 1 /* accept a request signed for HD_NODEAUTH_ANY (join, heartbeat, pulls) */
#define HD_NA_UNKNOWN                                                                              \
    2 /* accept a sender that known() does not know (a join: the caller then                       \
       * checks that the body describes who->sender) */
/* Verifies r's node signature. known(arg, id) says whether id is a node this one knows.
 * On success the HTTP layer will check the body against the signed hash (r->body_sha256).
 * 0 with *who; HD_DECLINED when r carries no node signature (X-Hoard-Signature); else
 * HD_EACCESS, or HD_EUNAVAIL when the replay cache is full, with *why saying what failed. */
int hd_nodeauth_verify(struct hd_nodeauth *na, struct hd_req *r, int flags,
                       int (*known)(void *arg, const char *id), void *arg,
                       struct hd_nodeauth_who *who, const char **why);

/* Signature over a response that drives a decision (a vote, a lease, a smap answer), bound
 * to the request's nonce: HMAC(K_self, "HOARD1-RESP\n" nonce "\n" status "\n" body sha256
 * "\n" self). hd_nodeauth_resp_sign adds it as X-Hoard-Signature to r's response (with
 * X-Hoard-Node); hd_nodeauth_resp_verify checks one a call got back from `from` for the
 * nonce it sent (sig->nonce). 0, or HD_EACCESS. */
int hd_nodeauth_resp_sign(struct hd_nodeauth *na, struct hd_req *r, int status, const void *body,
                          size_t len);
/* Makes every buffered answer to r (errors included) signed by hd_nodeauth_resp_sign. */
void hd_nodeauth_sign_answers(struct hd_nodeauth *na, struct hd_req *r);
int hd_nodeauth_resp_verify(struct hd_nodeauth *na, const char *from, const char *nonce,
                            long status, const void *body, size_t len, const char *got_sig);

#endif
