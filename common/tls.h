/* tls: the node's certificate, key and CA (tls.cert, tls.key, tls.ca) for both sides of TLS.
 * Server side: libmicrohttpd terminates TLS with GnuTLS (the only TLS it is built with); it
 * asks hd_tls for the credentials at every handshake, so hd_tls_reload (SIGHUP) changes the
 * certificate for new connections while open ones keep theirs. Client certificates (mutual
 * TLS) are checked with OpenSSL against the CA. Client side: hd_tls_curl sets up a libcurl
 * handle (OpenSSL) to verify the peer against the CA and present the node's certificate.
 *
 * One set of credentials per process (hd_tls_use): hd_tls_new/_reload/_free from the main
 * thread; hd_tls_curl, hd_tls_peer_ok and the handshake callback from any thread. */
#ifndef HD_TLS_H
#define HD_TLS_H

#include <stddef.h>

struct hd_tls;
struct MHD_Connection;

/* Loads cert (PEM chain, leaf first), key (PEM) and ca (PEM bundle; "" = none). Checks that
 * the key belongs to the certificate and, with a CA, that the certificate chains to it.
 * client_auth: node calls must present a client certificate signed by the CA (needs ca).
 * 0, or a negative code with err saying what is wrong. */
int hd_tls_new(const char *cert, const char *key, const char *ca, int client_auth,
               struct hd_tls **out, char *err, size_t errlen);
/* Node calls check the peer's certificate names against its URL (on, the default), or only
 * that it chains to the CA (off: tls.verify_host = false, for a CA that signs hoard nodes
 * only, when node URLs carry addresses the certificates cannot name). */
void hd_tls_verify_host(struct hd_tls *t, int on);
/* Reads the three files again. On any error the credentials in use stay as they were. */
int hd_tls_reload(struct hd_tls *t, char *err, size_t errlen);
/* Frees t (NULL: no-op); after the HTTP server stopped and no call uses it any more. */
void hd_tls_free(struct hd_tls *t);

/* Makes t the process's credentials (NULL: TLS off) for the server and for node calls. */
void hd_tls_use(struct hd_tls *t);
/* TLS is on (hd_tls_use with credentials). */
int hd_tls_on(void);
/* Node calls must come with a verified client certificate (tls.client_auth). */
int hd_tls_client_auth(void);

/* The subject line and expiry of the certificate in use, for logs ("CN=x, not after ..."). */
void hd_tls_describe(const struct hd_tls *t, char *buf, size_t len);

/* For the HTTP server (common/http.c): the GnuTLS certificate callback to hand to
 * MHD_OPTION_HTTPS_CERT_CALLBACK, and the CA in PEM for MHD_OPTION_HTTPS_MEM_TRUST (makes
 * the server ask for client certificates), or NULL when client_auth is off. */
void *hd_tls_mhd_cert_callback(void);
const char *hd_tls_mhd_trust(const struct hd_tls *t);

/* The client certificate of a TLS connection verified against the CA in use: 1 when it
 * chains to it, 0 when absent or not (why says which; may be NULL), -1 when conn is not TLS.
 * The answer is kept with the connection (until the CA set changes) when the server gave
 * connections a context from hd_tls_conn_new. */
int hd_tls_peer_ok(struct MHD_Connection *conn, const char **why);
/* Per-connection context for hd_tls_peer_ok's answer (MHD_OPTION_NOTIFY_CONNECTION's
 * socket_context): NULL on OOM (then every call verifies again). Freed with _free. */
void *hd_tls_conn_new(void);
void hd_tls_conn_free(void *ctx);

/* Sets up a libcurl easy handle for a call to another node: https is verified against the
 * CA (peer and host name), and the node's certificate is offered as a client certificate.
 * No-op while TLS is off. curl is a CURL *. */
void hd_tls_curl(void *curl);
/* The scheme of this node's URLs: "https" with TLS on, else "http". */
const char *hd_tls_scheme(void);

/* Verifies a PEM certificate (chain, leaf first) against a PEM CA bundle with OpenSSL:
 * 0, or HD_EACCESS with why. Exposed for unit tests and hd_tls_new. */
int hd_tls_verify_pem(const char *chain_pem, size_t chain_len, const char *ca_pem, size_t ca_len,
                      const char **why);

#endif
