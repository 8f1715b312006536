/* libFuzzer driver for the XML parser, the typed S3 body parsers and the escaper
 * (common/xml). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count(const struct hd_xnode *n, int depth)
{
    size_t c = 0;

    if (depth > HD_XML_MAX_DEPTH)
        __builtin_trap();
    for (; n; n = n->next) {
        if (!n->name || !n->text || !n->raw || strlen(n->raw) > HD_XML_MAX_TEXT)
            __builtin_trap();
        c += 1 + count(n->child, depth + 1);
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct hd_xnode *root = NULL;
    struct hd_delete_req d;
    struct hd_complete_req c;
    struct hd_buf b;
    char loc[64];
    int rc;

    rc = hd_xml_parse(body, size, &root);
    if (rc == 0) {
        if (!root || root->next || count(root, 1) > HD_XML_MAX_NODES)
            __builtin_trap();
    } else if (root || (rc != HD_EMALFORMEDXML && rc != -12 /* ENOMEM */)) {
        __builtin_trap();
    }
    hd_xnode_free(root);

    if (hd_xml_parse_delete(body, size, &d) == 0) {
        if (d.n == 0 || d.n > HD_XML_DELETE_MAX)
            __builtin_trap();
        for (size_t i = 0; i < d.n; i++)
            if (!d.objs[i].key)
                __builtin_trap();
    } else if (d.n || d.objs) {
        __builtin_trap();
    }
    hd_xml_delete_cleanup(&d);

    if (hd_xml_parse_complete(body, size, &c) == 0) {
        if (c.n == 0 || c.n > HD_XML_COMPLETE_MAX_PARTS)
            __builtin_trap();
        for (size_t i = 0; i < c.n; i++)
            if (!c.parts[i].etag || c.parts[i].part_number < 1 || c.parts[i].part_number > 10000)
                __builtin_trap();
    } else if (c.n || c.parts) {
        __builtin_trap();
    }
    hd_xml_complete_cleanup(&c);

    if (hd_xml_parse_create_bucket(body, size, loc, sizeof(loc)) == 0 && strlen(loc) >= sizeof(loc))
        __builtin_trap();

    /* whatever bytes the writer escapes, the result is well-formed XML */
    if (size <= HD_XML_MAX_TEXT / 8) {
        hd_buf_init(&b);
        hd_xml_open(&b, "a");
        hd_xml_escape(&b, body, size);
        hd_xml_close(&b, "a");
        root = NULL;
        if (!b.oom && hd_xml_parse(b.data, b.len, &root) != 0)
            __builtin_trap();
        hd_xnode_free(root);
        hd_buf_cleanup(&b);
    }
    return 0;
}
