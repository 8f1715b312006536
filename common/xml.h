/* xml: S3 XML in both directions: an escaping writer into hd_buf, and an expat-based parser
 * into a small DOM with hard limits, plus typed parsers for request bodies. Any thread. */
#ifndef HD_XML_H
#define HD_XML_H

#include <stddef.h>

#include "common/buf.h"

#define HD_XML_S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"

/* ---- Writer ----------------------------------------------------------------------------- */
/* The writer never fails by itself: allocation failure is sticky in b->oom (see buf.h). */

/* Appends s[0..n) as XML 1.0 character data, safe in text and in attribute values:
 * & < > " ' become entities; \t \n \r become &#x9; &#xA; &#xD; (so they survive parsing
 * unnormalized); other C0 controls, invalid or overlong UTF-8 bytes, surrogates, U+FFFE and
 * U+FFFF (all unrepresentable in XML 1.0) become U+FFFD. Callers that must round-trip such
 * keys exactly use EncodingType=url and URL-encode before calling this. */
void hd_xml_escape(struct hd_buf *b, const char *s, size_t n);
/* <tag>escaped text</tag>; NULL text gives <tag></tag>. Tags are trusted literals. */
void hd_xml_elem(struct hd_buf *b, const char *tag, const char *text);
/* As hd_xml_elem with printf-formatted text (the result is escaped). */
void hd_xml_elemf(struct hd_buf *b, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As hd_xml_elem, the text URI-encoded first when url (S3 EncodingType=url for keys and
 * prefixes; '/' kept). */
void hd_xml_key_elem(struct hd_buf *b, const char *tag, const char *text, int url);
void hd_xml_open(struct hd_buf *b, const char *tag);
/* <tag xmlns="ns"> (ns escaped), e.g. hd_xml_open_ns(b, "ListBucketResult", HD_XML_S3_NS). */
void hd_xml_open_ns(struct hd_buf *b, const char *tag, const char *ns);
void hd_xml_close(struct hd_buf *b, const char *tag);
/* <?xml version="1.0" encoding="UTF-8"?> and a newline. */
void hd_xml_decl(struct hd_buf *b);

/* ---- DOM parser ------------------------------------------------------------------------- */

#define HD_XML_MAX_BODY (2u << 20)
#define HD_XML_MAX_DEPTH 16
#define HD_XML_MAX_NODES 20000
#define HD_XML_MAX_TEXT 8192

struct hd_xnode {
    char *name; /* local name, namespace stripped */
    char *text; /* the element's own character data, whitespace-trimmed ("" when none) */
    char *raw;  /* the same untrimmed (object keys may begin or end with spaces) */
    struct hd_xnode *child; /* first child element */
    struct hd_xnode *next;  /* next sibling element */
};

/* Parses body[0..len) into a tree; *root is the document element (caller frees with
 * hd_xnode_free). Attributes, comments and PIs are dropped; whitespace-only text between
 * child elements is dropped. Rejects (HD_EMALFORMEDXML, *root = NULL): anything not
 * well-formed, any DOCTYPE (so no entity expansion), unbound namespace prefixes, bodies over
 * HD_XML_MAX_BODY, depth over HD_XML_MAX_DEPTH, more than HD_XML_MAX_NODES elements, more
 * than HD_XML_MAX_TEXT bytes of text in one element. -ENOMEM on allocation failure. */
int hd_xml_parse(const char *body, size_t len, struct hd_xnode **root);
/* hd_xml_parse of a list document: <root_name> holding one or more elements, all named item
 * (CORSConfiguration of CORSRule, LifecycleConfiguration of Rule). HD_EMALFORMEDXML for
 * another shape, *root NULL. */
int hd_xml_parse_list(const char *body, size_t len, const char *root_name, const char *item,
                      struct hd_xnode **root);
/* First child element named `name`, or NULL. */
struct hd_xnode *hd_xnode_child(const struct hd_xnode *n, const char *name);
/* Next sibling after n named `name`, or NULL: for (c = hd_xnode_child(p, "Part"); c;
 * c = hd_xnode_next(c, "Part")). */
struct hd_xnode *hd_xnode_next(const struct hd_xnode *n, const char *name);
/* Trimmed text of the first child named `name`, NULL when there is no such child. */
const char *hd_xnode_child_text(const struct hd_xnode *n, const char *name);
/* Frees n, its children and its following siblings. NULL is a no-op. */
void hd_xnode_free(struct hd_xnode *n);

/* ---- Typed request bodies ------------------------------------------------------------- */

#define HD_XML_DELETE_MAX 1000

struct hd_delete_obj {
    char *key;        /* exact (untrimmed); may be "" (the caller validates the name) */
    char *version_id; /* NULL when absent */
};

struct hd_delete_req {
    int quiet;
    struct hd_delete_obj *objs; /* document order */
    size_t n;
};

/* DeleteObjects: <Delete><Quiet>true</Quiet><Object><Key>k</Key><VersionId>v</VersionId>
 * </Object>...</Delete>. HD_EMALFORMEDXML for a different root, an Object without Key, a Quiet
 * other than true/false, zero or more than HD_XML_DELETE_MAX objects. On success the caller
 * owns *out (hd_xml_delete_cleanup); on failure *out is empty. */
int hd_xml_parse_delete(const char *body, size_t len, struct hd_delete_req *out);
void hd_xml_delete_cleanup(struct hd_delete_req *r);

/* A 10000-part CompleteMultipartUpload has 30000+ elements and may pass 2 MiB with checksums
 * and indentation, so it gets larger limits than hd_xml_parse. */
#define HD_XML_COMPLETE_MAX_BODY (8u << 20)
#define HD_XML_COMPLETE_MAX_PARTS 10000
#define HD_XML_PART_MAX_CK 8

struct hd_xml_checksum {
    char *algo;  /* element name after "Checksum": "CRC32", "CRC32C", "SHA256", ... */
    char *value; /* as sent (base64), trimmed */
};

struct hd_complete_part {
    unsigned part_number; /* 1..10000 */
    char *etag;           /* surrounding quotes stripped */
    int any_etag;         /* any ETag will do (AIStore's mpt-complete sends none, aismsg.h) */
    size_t nck;
    struct hd_xml_checksum ck[HD_XML_PART_MAX_CK];
};

struct hd_complete_req {
    struct hd_complete_part *parts; /* document order; ordering rules are the caller's */
    size_t n;
};

/* CompleteMultipartUpload: <CompleteMultipartUpload><Part><PartNumber>1</PartNumber>
 * <ETag>"x"</ETag><ChecksumCRC32>..</ChecksumCRC32></Part>...</CompleteMultipartUpload>.
 * HD_EMALFORMEDXML for a different root, a Part without PartNumber or ETag, a PartNumber not
 * in 1..10000, a repeated element in a Part, zero or more than 10000 parts. Ownership as for
 * hd_xml_parse_delete (hd_xml_complete_cleanup). */
int hd_xml_parse_complete(const char *body, size_t len, struct hd_complete_req *out);
void hd_xml_complete_cleanup(struct hd_complete_req *r);
/* The part's checksum value for algo ("CRC32", case-insensitive), or NULL. */
const char *hd_xml_part_checksum(const struct hd_complete_part *p, const char *algo);

/* CreateBucket: <CreateBucketConfiguration><LocationConstraint>r</LocationConstraint>...;
 * an empty (or all-whitespace) body or no LocationConstraint gives "". Writes at most max
 * bytes including the NUL. HD_EMALFORMEDXML for bad XML or another root, HD_EBADARG when the
 * location does not fit. Nothing to free. */
int hd_xml_parse_create_bucket(const char *body, size_t len, char *location, size_t max);

#endif
