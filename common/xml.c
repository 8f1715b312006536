#include "common/xml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#include "common/errors.h"
#include "common/httputil.h"

/* ---- Writer ----------------------------------------------------------------------------- */

static const char fffd[] = "\xEF\xBF\xBD"; /* U+FFFD REPLACEMENT CHARACTER */

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;

    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n - 1 < need || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k <= need; k++)
        if (s[k] < 0x80 || s[k] > 0xBF)
            return 0;
    return need + 1;
}

void hd_xml_escape(struct hd_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, start = 0;

    while (i < n) {
        const char *rep;
        unsigned char c = u[i];
        size_t adv = 1;

        if (c >= 0x80) {
            size_t l = utf8_seq(u + i, n - i);
            if (l && !(l == 3 && c == 0xEF && u[i + 1] == 0xBF && u[i + 2] >= 0xBE)) {
                i += l;
                continue;
            }
            /* invalid bytes one by one; U+FFFE and U+FFFF (not XML Chars) as a whole */
            adv = l ? l : 1;
            rep = fffd;
        } else {
            switch (c) {
            case '&':
                rep = "&amp;";
                break;
            case '<':
                rep = "&lt;";
                break;
            case '>':
                rep = "&gt;";
                break;
            case '"':
                rep = "&quot;";
                break;
            case '\'':
                rep = "&apos;";
                break;
            case '\t':
                rep = "&#x9;";
                break;
            case '\n':
                rep = "&#xA;";
                break;
            case '\r':
                rep = "&#xD;";
                break;
            default:
                if (c >= 0x20) {
                    i++;
                    continue;
                }
                rep = fffd;
            }
        }
        if (i > start)
            hd_buf_append(b, s + start, i - start);
        hd_buf_puts(b, rep);
        i += adv;
        start = i;
    }
    if (i > start)
        hd_buf_append(b, s + start, i - start);
}

void hd_xml_key_elem(struct hd_buf *b, const char *tag, const char *text, int url)
{
    struct hd_buf e;

    if (!url) {
        hd_xml_elem(b, tag, text);
        return;
    }
    hd_buf_init(&e);
    hd_uri_encode(&e, text, strlen(text), 1);
    if (e.oom)
        b->oom = 1;
    hd_xml_elem(b, tag, e.data ? e.data : "");
    hd_buf_cleanup(&e);
}

void hd_xml_open(struct hd_buf *b, const char *tag)
{
    hd_buf_printf(b, "<%s>", tag);
}

void hd_xml_open_ns(struct hd_buf *b, const char *tag, const char *ns)
{
    hd_buf_printf(b, "<%s xmlns=\"", tag);
    hd_xml_escape(b, ns, strlen(ns));
    hd_buf_puts(b, "\">");
}

void hd_xml_close(struct hd_buf *b, const char *tag)
{
    hd_buf_printf(b, "</%s>", tag);
}

void hd_xml_elem(struct hd_buf *b, const char *tag, const char *text)
{
    hd_xml_open(b, tag);
    if (text)
        hd_xml_escape(b, text, strlen(text));
    hd_xml_close(b, tag);
}

void hd_xml_elemf(struct hd_buf *b, const char *tag, const char *fmt, ...)
{
    struct hd_buf tmp;
    va_list ap;

    hd_buf_init(&tmp);
    va_start(ap, fmt);
    if (hd_buf_vprintf(&tmp, fmt, ap) < 0)
        b->oom = 1;
    va_end(ap);
    hd_xml_open(b, tag);
    if (tmp.data)
        hd_xml_escape(b, tmp.data, tmp.len);
    hd_xml_close(b, tag);
    hd_buf_cleanup(&tmp);
}

void hd_xml_decl(struct hd_buf *b)
{
    hd_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

/* ---- DOM parser ------------------------------------------------------------------------- */

#define NS_SEP '\x1F' /* not an XML Char, so it can appear in neither URIs nor names */

struct pstate {
    XML_Parser p;
    struct hd_xnode *root;
    struct hd_xnode *open[HD_XML_MAX_DEPTH]; /* open elements, root first */
    struct hd_xnode *last[HD_XML_MAX_DEPTH]; /* last child of each open element */
    struct hd_buf text[HD_XML_MAX_DEPTH];    /* character data of each open element */
    int nonws[HD_XML_MAX_DEPTH];             /* text has more than whitespace */
    int depth;
    size_t nodes, max_nodes;
    int err;
};

static void fail(struct pstate *st, int code)
{
    if (!st->err)
        st->err = code;
    XML_StopParser(st->p, XML_FALSE);
}

static int is_xml_ws(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    struct pstate *st = ud;
    const char *local = strrchr(name, NS_SEP);
    struct hd_xnode *n;
    int d = st->depth;

    (void)atts;
    if (st->err)
        return;
    if (d >= HD_XML_MAX_DEPTH || ++st->nodes > st->max_nodes) {
        fail(st, HD_EMALFORMEDXML);
        return;
    }
    n = calloc(1, sizeof(*n));
    if (!n || !(n->name = strdup(local ? local + 1 : name))) {
        free(n);
        fail(st, -ENOMEM);
        return;
    }
    if (d == 0) {
        st->root = n;
    } else {
        /* Whitespace between child elements is indentation, not content: drop it so it
         * neither counts against the text limit nor shows in the parent's text. */
        if (!st->nonws[d - 1])
            hd_buf_reset(&st->text[d - 1]);
        if (st->last[d - 1])
            st->last[d - 1]->next = n;
        else
            st->open[d - 1]->child = n;
        st->last[d - 1] = n;
    }
    st->open[d] = n;
    st->last[d] = NULL;
    hd_buf_reset(&st->text[d]);
    st->nonws[d] = 0;
    st->depth = d + 1;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    struct pstate *st = ud;
    struct hd_xnode *n;
    struct hd_buf *t;
    size_t a, z;

    (void)name;
    if (st->err || st->depth == 0)
        return;
    n = st->open[st->depth - 1];
    t = &st->text[st->depth - 1];
    n->raw = strndup(t->data ? t->data : "", t->len);
    if (!n->raw) {
        fail(st, -ENOMEM);
        return;
    }
    for (a = 0; a < t->len && is_xml_ws((unsigned char)n->raw[a]); a++)
        ;
    for (z = t->len; z > a && is_xml_ws((unsigned char)n->raw[z - 1]); z--)
        ;
    if (a == 0 && z == t->len) {
        n->text = n->raw;
    } else if (!(n->text = strndup(n->raw + a, z - a))) {
        fail(st, -ENOMEM);
        return;
    }
    st->depth--;
}

static void XMLCALL on_chars(void *ud, const XML_Char *s, int len)
{
    struct pstate *st = ud;
    int d = st->depth - 1;

    if (st->err || d < 0 || len <= 0)
        return;
    if (st->text[d].len + (size_t)len > HD_XML_MAX_TEXT) {
        fail(st, HD_EMALFORMEDXML);
        return;
    }
    if (hd_buf_append(&st->text[d], s, (size_t)len) < 0) {
        fail(st, -ENOMEM);
        return;
    }
    for (int i = 0; i < len && !st->nonws[d]; i++)
        if (!is_xml_ws((unsigned char)s[i]))
            st->nonws[d] = 1;
}

/* Any DOCTYPE is refused: S3 bodies never carry one, and without it there are no entity
 * declarations to expand (billion laughs, external entities). */
static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    fail(ud, HD_EMALFORMEDXML);
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                              int value_len, const XML_Char *base, const XML_Char *sysid,
                              const XML_Char *pubid, const XML_Char *notation)
{
    (void)name;
    (void)is_param;
    (void)value;
    (void)value_len;
    (void)base;
    (void)sysid;
    (void)pubid;
    (void)notation;
    fail(ud, HD_EMALFORMEDXML);
}

static int parse_limited(const char *body, size_t len, size_t max_body, size_t max_nodes,
                         struct hd_xnode **root)
{
    struct pstate st;
    int rc = 0;

    *root = NULL;
    if (!body || len > max_body || len > INT32_MAX)
        return HD_EMALFORMEDXML;
    memset(&st, 0, sizeof(st));
    st.max_nodes = max_nodes;
    st.p = XML_ParserCreateNS(NULL, NS_SEP);
    if (!st.p)
        return -ENOMEM;
    XML_SetUserData(st.p, &st);
    XML_SetElementHandler(st.p, on_start, on_end);
    XML_SetCharacterDataHandler(st.p, on_chars);
    XML_SetStartDoctypeDeclHandler(st.p, on_doctype);
    XML_SetEntityDeclHandler(st.p, on_entity);
    XML_SetParamEntityParsing(st.p, XML_PARAM_ENTITY_PARSING_NEVER);
    if (XML_Parse(st.p, body, (int)len, XML_TRUE) != XML_STATUS_OK || st.err)
        rc = st.err ? st.err : HD_EMALFORMEDXML;
    else if (!st.root || st.depth != 0)
        rc = HD_EMALFORMEDXML;
    XML_ParserFree(st.p);
    for (int i = 0; i < HD_XML_MAX_DEPTH; i++)
        hd_buf_cleanup(&st.text[i]);
    if (rc < 0) {
        hd_xnode_free(st.root);
        return rc;
    }
    *root = st.root;
    return 0;
}

int hd_xml_parse(const char *body, size_t len, struct hd_xnode **root)
{
    return parse_limited(body, len, HD_XML_MAX_BODY, HD_XML_MAX_NODES, root);
}

struct hd_xnode *hd_xnode_next(const struct hd_xnode *n, const char *name)
{
    for (n = n ? n->next : NULL; n; n = n->next)
        if (strcmp(n->name, name) == 0)
            return (struct hd_xnode *)n;
    return NULL;
}

struct hd_xnode *hd_xnode_child(const struct hd_xnode *n, const char *name)
{
    const struct hd_xnode *c = n ? n->child : NULL;

    if (!c || strcmp(c->name, name) == 0)
        return (struct hd_xnode *)c;
    return hd_xnode_next(c, name);
}

const char *hd_xnode_child_text(const struct hd_xnode *n, const char *name)
{
    const struct hd_xnode *c = hd_xnode_child(n, name);

    return c ? c->text : NULL;
}

int hd_xml_parse_list(const char *body, size_t len, const char *root_name, const char *item,
                      struct hd_xnode **root)
{
    const struct hd_xnode *c;
    int rc = hd_xml_parse(body, len, root);

    if (rc < 0)
        return rc;
    if (strcmp((*root)->name, root_name) != 0 || !hd_xnode_child(*root, item))
        goto bad;
    for (c = (*root)->child; c; c = c->next)
        if (strcmp(c->name, item) != 0)
            goto bad;
    return 0;
bad:
    hd_xnode_free(*root);
    *root = NULL;
    return HD_EMALFORMEDXML;
}

void hd_xnode_free(struct hd_xnode *n)
{
    while (n) { /* siblings iteratively (there may be thousands); depth is bounded */
        struct hd_xnode *next = n->next;
        hd_xnode_free(n->child);
        if (n->text != n->raw)
            free(n->text);
        free(n->raw);
        free(n->name);
        free(n);
        n = next;
    }
}

/* ---- Typed request bodies ------------------------------------------------------------- */

static int ascii_case_eq(const char *a, const char *b)
{
    return strlen(a) == strlen(b) && hd_str_case_prefix(a, b);
}

static size_t count_named(const struct hd_xnode *parent, const char *name)
{
    size_t n = 0;

    for (const struct hd_xnode *c = hd_xnode_child(parent, name); c; c = hd_xnode_next(c, name))
        n++;
    return n;
}

void hd_xml_delete_cleanup(struct hd_delete_req *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->objs[i].key);
        free(r->objs[i].version_id);
    }
    free(r->objs);
    memset(r, 0, sizeof(*r));
}

int hd_xml_parse_delete(const char *body, size_t len, struct hd_delete_req *out)
{
    struct hd_xnode *root = NULL, *o;
    const char *quiet;
    size_t n;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = hd_xml_parse(body, len, &root);
    if (rc < 0)
        goto out;
    rc = HD_EMALFORMEDXML;
    if (strcmp(root->name, "Delete") != 0)
        goto out;
    quiet = hd_xnode_child_text(root, "Quiet");
    if (quiet) {
        if (ascii_case_eq(quiet, "true"))
            out->quiet = 1;
        else if (!ascii_case_eq(quiet, "false"))
            goto out;
    }
    n = count_named(root, "Object");
    if (n == 0 || n > HD_XML_DELETE_MAX)
        goto out;
    out->objs = calloc(n, sizeof(*out->objs));
    if (!out->objs) {
        rc = -ENOMEM;
        goto out;
    }
    for (o = hd_xnode_child(root, "Object"); o; o = hd_xnode_next(o, "Object")) {
        struct hd_delete_obj *d = &out->objs[out->n++];
        struct hd_xnode *k = hd_xnode_child(o, "Key");
        struct hd_xnode *v = hd_xnode_child(o, "VersionId");

        rc = HD_EMALFORMEDXML;
        if (!k || hd_xnode_next(k, "Key") || (v && hd_xnode_next(v, "VersionId")))
            goto out;
        rc = -ENOMEM;
        if (!(d->key = strdup(k->raw)))
            goto out;
        if (v && !(d->version_id = strdup(v->text)))
            goto out;
    }
    rc = 0;
out:
    hd_xnode_free(root);
    if (rc < 0)
        hd_xml_delete_cleanup(out);
    return rc;
}

void hd_xml_complete_cleanup(struct hd_complete_req *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->parts[i].etag);
        for (size_t k = 0; k < r->parts[i].nck; k++) {
            free(r->parts[i].ck[k].algo);
            free(r->parts[i].ck[k].value);
        }
    }
    free(r->parts);
    memset(r, 0, sizeof(*r));
}

const char *hd_xml_part_checksum(const struct hd_complete_part *p, const char *algo)
{
    for (size_t k = 0; p && algo && k < p->nck; k++)
        if (ascii_case_eq(p->ck[k].algo, algo))
            return p->ck[k].value;
    return NULL;
}

/* Fills one part from its <Part> element. */
static int complete_part(const struct hd_xnode *pe, struct hd_complete_part *p)
{
    int have_num = 0;

    for (const struct hd_xnode *c = pe->child; c; c = c->next) {
        if (strcmp(c->name, "PartNumber") == 0) {
            uint64_t v;
            if (have_num || hd_parse_u64(c->text, &v) < 0 || v < 1 || v > HD_XML_COMPLETE_MAX_PARTS)
                return HD_EMALFORMEDXML;
            p->part_number = (unsigned)v;
            have_num = 1;
        } else if (strcmp(c->name, "ETag") == 0) {
            const char *s = c->text;
            size_t l = strlen(s);
            if (p->etag)
                return HD_EMALFORMEDXML;
            if (l && s[0] == '"') {
                s++;
                l--;
            }
            if (l && s[l - 1] == '"')
                l--;
            if (!(p->etag = strndup(s, l)))
                return -ENOMEM;
        } else if (strncmp(c->name, "Checksum", 8) == 0 && c->name[8]) {
            struct hd_xml_checksum *ck;
            if (hd_xml_part_checksum(p, c->name + 8) || p->nck >= HD_XML_PART_MAX_CK)
                return HD_EMALFORMEDXML;
            ck = &p->ck[p->nck++];
            ck->algo = strdup(c->name + 8);
            ck->value = strdup(c->text);
            if (!ck->algo || !ck->value)
                return -ENOMEM;
        } /* other elements (from newer SDKs) are ignored */
    }
    return have_num && p->etag ? 0 : HD_EMALFORMEDXML;
}

int hd_xml_parse_complete(const char *body, size_t len, struct hd_complete_req *out)
{
    /* Part + PartNumber + ETag + up to HD_XML_PART_MAX_CK checksums each, plus the root. */
    const size_t max_nodes = HD_XML_COMPLETE_MAX_PARTS * (3 + HD_XML_PART_MAX_CK) + 1;
    struct hd_xnode *root = NULL, *pe;
    size_t n;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = parse_limited(body, len, HD_XML_COMPLETE_MAX_BODY, max_nodes, &root);
    if (rc < 0)
        goto out;
    rc = HD_EMALFORMEDXML;
    if (strcmp(root->name, "CompleteMultipartUpload") != 0)
        goto out;
    n = count_named(root, "Part");
    if (n == 0 || n > HD_XML_COMPLETE_MAX_PARTS)
        goto out;
    out->parts = calloc(n, sizeof(*out->parts));
    if (!out->parts) {
        rc = -ENOMEM;
        goto out;
    }
    for (pe = hd_xnode_child(root, "Part"); pe; pe = hd_xnode_next(pe, "Part")) {
        rc = complete_part(pe, &out->parts[out->n++]);
        if (rc < 0)
            goto out;
    }
    rc = 0;
out:
    hd_xnode_free(root);
    if (rc < 0)
        hd_xml_complete_cleanup(out);
    return rc;
}

int hd_xml_parse_create_bucket(const char *body, size_t len, char *location, size_t max)
{
    struct hd_xnode *root = NULL;
    const char *loc;
    size_t i, l;
    int rc;

    if (!location || max == 0)
        return HD_EBADARG;
    location[0] = '\0';
    for (i = 0; body && i < len && is_xml_ws((unsigned char)body[i]); i++)
        ;
    if (!body || i == len)
        return 0;
    rc = hd_xml_parse(body, len, &root);
    if (rc < 0)
        goto out;
    rc = HD_EMALFORMEDXML;
    if (strcmp(root->name, "CreateBucketConfiguration") != 0)
        goto out;
    loc = hd_xnode_child_text(root, "LocationConstraint");
    if (!loc)
        loc = "";
    l = strlen(loc);
    rc = HD_EBADARG;
    if (l >= max)
        goto out;
    memcpy(location, loc, l + 1);
    rc = 0;
out:
    hd_xnode_free(root);
    return rc;
}
