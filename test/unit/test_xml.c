/* Unit tests for common/xml: escaping writer, DOM parser and its limits, typed parsers. */
#include "common/xml.h"

#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "test/unit/hd_test.h"

/* Bodies exactly as botocore 1.43 (and 1.26) serializes them. */
static const char boto_delete[] =
    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Object><Key>a "
    "b&amp;&lt;&gt;\"'</Key></Object><Object><Key> sp </Key><VersionId>v1</VersionId></"
    "Object><Quiet>true</Quiet></Delete>";
static const char boto_complete[] =
    "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Part><ETag>"
    "\"e1\"</ETag><PartNumber>1</PartNumber><ChecksumCRC32>DUoRhQ==</ChecksumCRC32></"
    "Part><Part><ETag>\"e2\"</ETag><PartNumber>2</PartNumber></Part></"
    "CompleteMultipartUpload>";
static const char boto_create[] =
    "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><"
    "LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>";

static int parse_str(const char *s, struct hd_xnode **root)
{
    return hd_xml_parse(s, strlen(s), root);
}

static int parse_ok(const char *s)
{
    struct hd_xnode *r = NULL;
    int rc = parse_str(s, &r);

    hd_xnode_free(r);
    return rc;
}

HD_SUITE(xml_escape)
{
    static const struct {
        const char *in;
        size_t n; /* 0: strlen */
        const char *out;
    } t[] = {
        {"plain", 0, "plain"},
        {"a&b<c>d\"e'f", 0, "a&amp;b&lt;c&gt;d&quot;e&apos;f"},
        {"&amp;", 0, "&amp;amp;"},
        {"t\tn\nr\r", 0, "t&#x9;n&#xA;r&#xD;"},
        {"\x01x\x1f\x7f", 0, "\xEF\xBF\xBDx\xEF\xBF\xBD\x7f"},
        {"a\0b", 3,
         "a\xEF\xBF\xBD"
         "b"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"\xc2\x80\xc2\x9f", 0, "\xc2\x80\xc2\x9f"}, /* C1 controls are XML 1.0 Chars */
        {"\xef\xbf\xbd", 0, "\xef\xbf\xbd"},         /* U+FFFD itself */
        {"\xef\xbf\xbe\xef\xbf\xbf", 0, "\xEF\xBF\xBD\xEF\xBF\xBD"}, /* U+FFFE/FFFF */
        {"\xed\xa0\x80", 0, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate: per byte */
        {"\xc0\xaf", 0, "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* overlong */
        {"x\xff", 0, "x\xEF\xBF\xBD"},
        {"\xe2\x82", 0, "\xEF\xBF\xBD\xEF\xBF\xBD"}, /* truncated at the end */
        {"\xe2\x82<", 0, "\xEF\xBF\xBD\xEF\xBF\xBD&lt;"},
        {"", 0, ""},
    };
    struct hd_buf b;

    hd_buf_init(&b);
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        hd_buf_reset(&b);
        hd_xml_escape(&b, t[i].in, t[i].n ? t[i].n : strlen(t[i].in));
        CHECK_EQ_STR(b.data ? b.data : "", t[i].out);
    }

    /* Whatever goes in, the result parses, and valid text round-trips exactly. */
    {
        char all[256];
        struct hd_xnode *r = NULL;
        for (int i = 0; i < 256; i++)
            all[i] = (char)i;
        hd_buf_reset(&b);
        hd_xml_open(&b, "a");
        hd_xml_escape(&b, all, sizeof(all));
        hd_xml_close(&b, "a");
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), 0);
        hd_xnode_free(r);

        static const char valid[] = " lead\ttab\r\nCRLF \"q\" 'a' <&> \xe2\x82\xac trail ";
        hd_buf_reset(&b);
        hd_xml_open(&b, "Key");
        hd_xml_escape(&b, valid, strlen(valid));
        hd_xml_close(&b, "Key");
        r = NULL;
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), 0);
        if (r)
            CHECK_EQ_STR(r->raw, valid);
        hd_xnode_free(r);
    }
    hd_buf_cleanup(&b);
}

HD_SUITE(xml_writer)
{
    struct hd_buf b;

    hd_buf_init(&b);
    hd_xml_decl(&b);
    hd_xml_open_ns(&b, "ListBucketResult", HD_XML_S3_NS);
    hd_xml_elem(&b, "Name", "bk");
    hd_xml_elem(&b, "Prefix", "a<b");
    hd_xml_elem(&b, "Marker", NULL);
    hd_xml_elemf(&b, "MaxKeys", "%d", 1000);
    hd_xml_elemf(&b, "Key", "%s&%s", "x", "y");
    hd_xml_open(&b, "Contents");
    hd_xml_elemf(&b, "Size", "%llu", 18446744073709551615ULL);
    hd_xml_close(&b, "Contents");
    hd_xml_close(&b, "ListBucketResult");
    CHECK_EQ_STR(b.data, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                         "<Name>bk</Name><Prefix>a&lt;b</Prefix><Marker></Marker>"
                         "<MaxKeys>1000</MaxKeys><Key>x&amp;y</Key>"
                         "<Contents><Size>18446744073709551615</Size></Contents>"
                         "</ListBucketResult>");
    CHECK(!b.oom);

    /* what the writer makes, the parser reads back */
    {
        struct hd_xnode *r = NULL;
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), 0);
        if (r) {
            CHECK_EQ_STR(r->name, "ListBucketResult");
            CHECK_EQ_STR(hd_xnode_child_text(r, "Prefix"), "a<b");
            CHECK_EQ_STR(hd_xnode_child_text(r, "Marker"), "");
            CHECK_EQ_STR(hd_xnode_child_text(hd_xnode_child(r, "Contents"), "Size"),
                         "18446744073709551615");
        }
        hd_xnode_free(r);
    }
    hd_buf_cleanup(&b);
}

HD_SUITE(xml_dom)
{
    struct hd_xnode *r = NULL, *c;

    /* namespaces stripped, text trimmed, raw kept, whitespace between children dropped */
    CHECK_EQ_INT(parse_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                           "<Root xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\" a=\"1\">\n"
                           "  <!-- comment -->\n"
                           "  <A>  one  </A>\n"
                           "  <B/>\n"
                           "  <A><![CDATA[<two>]]></A>\n"
                           "  <?pi stuff?>\n"
                           "  <C><D>deep</D></C>\n"
                           "</Root>\n",
                           &r),
                 0);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_STR(r->name, "Root");
        CHECK_EQ_STR(r->text, "");
        c = hd_xnode_child(r, "A");
        CHECK(c != NULL);
        if (c) {
            CHECK_EQ_STR(c->text, "one");
            CHECK_EQ_STR(c->raw, "  one  ");
            c = hd_xnode_next(c, "A");
            CHECK(c != NULL);
            if (c)
                CHECK_EQ_STR(c->text, "<two>");
            CHECK(c && hd_xnode_next(c, "A") == NULL);
        }
        CHECK_EQ_STR(hd_xnode_child_text(r, "B"), "");
        CHECK(hd_xnode_child(r, "D") == NULL); /* children only, not descendants */
        CHECK_EQ_STR(hd_xnode_child_text(hd_xnode_child(r, "C"), "D"), "deep");
        CHECK(hd_xnode_child_text(r, "Nope") == NULL);
        /* document order */
        c = r->child;
        CHECK(c && strcmp(c->name, "A") == 0);
        c = c ? c->next : NULL;
        CHECK(c && strcmp(c->name, "B") == 0);
        c = c ? c->next : NULL;
        CHECK(c && strcmp(c->name, "A") == 0);
        c = c ? c->next : NULL;
        CHECK(c && strcmp(c->name, "C") == 0);
        CHECK(c && c->next == NULL);
    }
    hd_xnode_free(r);
    hd_xnode_free(NULL);
    CHECK(hd_xnode_child(NULL, "A") == NULL);
    CHECK(hd_xnode_next(NULL, "A") == NULL);

    /* prefixed namespaces */
    r = NULL;
    CHECK_EQ_INT(parse_str("<s3:Delete xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                           "<s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>",
                           &r),
                 0);
    if (r) {
        CHECK_EQ_STR(r->name, "Delete");
        CHECK_EQ_STR(hd_xnode_child_text(hd_xnode_child(r, "Object"), "Key"), "k");
    }
    hd_xnode_free(r);
    CHECK_EQ_INT(parse_ok("<s3:Delete/>"), HD_EMALFORMEDXML); /* unbound prefix */

    /* mixed content keeps non-whitespace text; entities and char refs decode */
    r = NULL;
    CHECK_EQ_INT(parse_str("<a> x <b/> y &amp; &#x41;&#66; </a>", &r), 0);
    if (r) {
        CHECK_EQ_STR(r->raw, " x  y & AB ");
        CHECK_EQ_STR(r->text, "x  y & AB");
    }
    hd_xnode_free(r);

    /* other encodings are transcoded to UTF-8 */
    r = NULL;
    CHECK_EQ_INT(parse_str("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf\xe9</a>", &r), 0);
    if (r)
        CHECK_EQ_STR(r->text, "caf\xc3\xa9");
    hd_xnode_free(r);
}

HD_SUITE(xml_malformed)
{
    static const char *const bad[] = {
        "",
        " ",
        "text",
        "<",
        "<a>",
        "<a></b>",
        "<a><b></a></b>",
        "<a/><b/>",
        "<a/>junk",
        "<a>&unknown;</a>",
        "<a>&#0;</a>",
        "<a>&#x1;</a>",
        "<a>\x01</a>",
        "<a>\xff</a>",
        "<a>\xc0\xaf</a>",
        "<a b=\"1\" b=\"2\"/>",
        "<a b=1/>",
        "<1a/>",
        "<?xml version=\"1.0\" encoding=\"bogus\"?><a/>",
        "<?xml version=\"1.0\"?><?xml version=\"1.0\"?><a/>",
        "<a><![CDATA[x]></a>",
        "<a><!-- x --- y --></a>",
        "<a xmlns:p=\"\"><p:b/></a>",
        "<a xmlns:p=\"u\" xmlns:q=\"u\"><b p:c=\"1\" q:c=\"2\"/></a>",
    };
    struct hd_xnode *r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse_ok(bad[i]);
        if (rc != HD_EMALFORMEDXML)
            fprintf(stderr, "  accepted bad xml #%zu: %s\n", i, bad[i]);
        CHECK_EQ_INT(rc, HD_EMALFORMEDXML);
    }
    /* embedded NUL */
    r = (struct hd_xnode *)1;
    CHECK_EQ_INT(hd_xml_parse("<a>x\0y</a>", 10, &r), HD_EMALFORMEDXML);
    CHECK(r == NULL);
    CHECK_EQ_INT(hd_xml_parse(NULL, 0, &r), HD_EMALFORMEDXML);

    /* every proper prefix of a valid body is malformed */
    {
        size_t n = strlen(boto_complete);
        int bad_prefixes = 0;
        for (size_t l = 0; l < n; l++)
            if (hd_xml_parse(boto_complete, l, &r) != HD_EMALFORMEDXML)
                bad_prefixes++;
        CHECK_EQ_INT(bad_prefixes, 0);
        CHECK_EQ_INT(hd_xml_parse(boto_complete, n, &r), 0);
        hd_xnode_free(r);
    }
}

HD_SUITE(xml_doctype)
{
    static const char *const bombs[] = {
        /* billion laughs */
        "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
        "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">"
        "<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">]>"
        "<Delete><Object><Key>&lol4;</Key></Object></Delete>",
        /* external entity (XXE) */
        "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
        "<Delete><Object><Key>&x;</Key></Object></Delete>",
        /* parameter entity */
        "<!DOCTYPE d [<!ENTITY % p SYSTEM \"http://127.0.0.1/x.dtd\"> %p;]><Delete/>",
        /* external DTD */
        "<!DOCTYPE Delete SYSTEM \"http://127.0.0.1/x.dtd\"><Delete/>",
        /* harmless-looking DOCTYPE is still refused */
        "<!DOCTYPE Delete><Delete><Object><Key>k</Key></Object></Delete>",
        /* an entity declared in an internal subset, used in an attribute */
        "<!DOCTYPE a [<!ENTITY e \"v\">]><a b=\"&e;\"/>",
    };
    struct hd_delete_req d;

    for (size_t i = 0; i < sizeof(bombs) / sizeof(bombs[0]); i++) {
        CHECK_EQ_INT(parse_ok(bombs[i]), HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_xml_parse_delete(bombs[i], strlen(bombs[i]), &d), HD_EMALFORMEDXML);
        CHECK_EQ_INT(d.n, 0);
    }
}

HD_SUITE(xml_limits)
{
    struct hd_buf b;
    struct hd_xnode *r = NULL;

    hd_buf_init(&b);
    /* depth */
    for (int depth = HD_XML_MAX_DEPTH; depth <= HD_XML_MAX_DEPTH + 1; depth++) {
        hd_buf_reset(&b);
        for (int i = 0; i < depth; i++)
            hd_buf_puts(&b, "<d>");
        for (int i = 0; i < depth; i++)
            hd_buf_puts(&b, "</d>");
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r),
                     depth <= HD_XML_MAX_DEPTH ? 0 : HD_EMALFORMEDXML);
        hd_xnode_free(r);
        r = NULL;
    }
    /* node count (the root counts) */
    for (int n = HD_XML_MAX_NODES; n <= HD_XML_MAX_NODES + 1; n++) {
        hd_buf_reset(&b);
        hd_buf_puts(&b, "<r>");
        for (int i = 1; i < n; i++)
            hd_buf_puts(&b, "<x/>");
        hd_buf_puts(&b, "</r>");
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), n <= HD_XML_MAX_NODES ? 0 : HD_EMALFORMEDXML);
        hd_xnode_free(r);
        r = NULL;
    }
    /* text per element, counted after decoding, across CDATA and references */
    for (int n = HD_XML_MAX_TEXT; n <= HD_XML_MAX_TEXT + 1; n++) {
        hd_buf_reset(&b);
        hd_buf_puts(&b, "<r><k><![CDATA[ab]]>&amp;");
        for (int i = 3; i < n; i++)
            hd_buf_puts(&b, "x");
        hd_buf_puts(&b, "</k></r>");
        CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), n <= HD_XML_MAX_TEXT ? 0 : HD_EMALFORMEDXML);
        if (r && r->child)
            CHECK_EQ_INT(strlen(r->child->text), n);
        hd_xnode_free(r);
        r = NULL;
    }
    /* indentation between many children does not count as text */
    hd_buf_reset(&b);
    hd_buf_puts(&b, "<r>");
    for (int i = 0; i < 3000; i++)
        hd_buf_puts(&b, "\n                <x/>");
    hd_buf_puts(&b, "\n</r>");
    CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), 0);
    if (r)
        CHECK_EQ_STR(r->text, "");
    hd_xnode_free(r);
    r = NULL;
    /* but real mixed content does */
    hd_buf_reset(&b);
    hd_buf_puts(&b, "<r>");
    for (int i = 0; i < 3000; i++)
        hd_buf_puts(&b, " ab <x/>");
    hd_buf_puts(&b, "</r>");
    CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), HD_EMALFORMEDXML);
    /* body size */
    hd_buf_reset(&b);
    hd_buf_puts(&b, "<r><!--");
    while (b.len < HD_XML_MAX_BODY - 7)
        hd_buf_puts(&b, "x");
    hd_buf_puts(&b, "--></r>");
    CHECK_EQ_INT(b.len, HD_XML_MAX_BODY);
    CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), 0);
    hd_xnode_free(r);
    r = NULL;
    hd_buf_puts(&b, " ");
    CHECK_EQ_INT(hd_xml_parse(b.data, b.len, &r), HD_EMALFORMEDXML);
    hd_buf_cleanup(&b);
}

HD_SUITE(xml_delete)
{
    struct hd_delete_req d;
    struct hd_buf b;

    CHECK_EQ_INT(hd_xml_parse_delete(boto_delete, strlen(boto_delete), &d), 0);
    CHECK_EQ_INT(d.quiet, 1);
    CHECK_EQ_INT(d.n, 2);
    if (d.n == 2) {
        CHECK_EQ_STR(d.objs[0].key, "a b&<>\"'");
        CHECK(d.objs[0].version_id == NULL);
        CHECK_EQ_STR(d.objs[1].key, " sp "); /* keys are not trimmed */
        CHECK_EQ_STR(d.objs[1].version_id, "v1");
    }
    hd_xml_delete_cleanup(&d);
    CHECK(d.objs == NULL && d.n == 0);
    hd_xml_delete_cleanup(NULL);

    /* pretty printed, no namespace, no Quiet, unicode and control-char keys */
    {
        static const char body[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                   "<Delete>\n"
                                   "  <Object>\n"
                                   "    <Key>dir/caf\xc3\xa9.txt</Key>\n"
                                   "  </Object>\n"
                                   "  <Object>\n"
                                   "    <VersionId> null </VersionId>\n"
                                   "    <Key>tab&#x9;key&#xD;</Key>\n"
                                   "  </Object>\n"
                                   "  <Object><Key></Key></Object>\n"
                                   "</Delete>\n";
        CHECK_EQ_INT(hd_xml_parse_delete(body, strlen(body), &d), 0);
        CHECK_EQ_INT(d.quiet, 0);
        CHECK_EQ_INT(d.n, 3);
        if (d.n == 3) {
            CHECK_EQ_STR(d.objs[0].key, "dir/caf\xc3\xa9.txt");
            CHECK_EQ_STR(d.objs[1].key, "tab\tkey\r");
            CHECK_EQ_STR(d.objs[1].version_id, "null");
            CHECK_EQ_STR(d.objs[2].key, "");
        }
        hd_xml_delete_cleanup(&d);
    }

    /* Quiet values */
    {
        static const struct {
            const char *body;
            int rc, quiet;
        } t[] = {
            {"<Delete><Quiet>false</Quiet><Object><Key>k</Key></Object></Delete>", 0, 0},
            {"<Delete><Quiet>True</Quiet><Object><Key>k</Key></Object></Delete>", 0, 1},
            {"<Delete><Quiet> true </Quiet><Object><Key>k</Key></Object></Delete>", 0, 1},
            {"<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>", HD_EMALFORMEDXML,
             0},
            {"<Delete><Quiet></Quiet><Object><Key>k</Key></Object></Delete>", HD_EMALFORMEDXML, 0},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
            CHECK_EQ_INT(hd_xml_parse_delete(t[i].body, strlen(t[i].body), &d), t[i].rc);
            CHECK_EQ_INT(d.quiet, t[i].quiet);
            hd_xml_delete_cleanup(&d);
        }
    }

    /* structural errors */
    {
        static const char *const bad[] = {
            "<Delete></Delete>",
            "<Delete><Quiet>true</Quiet></Delete>",
            "<Delete><Object></Object></Delete>",
            "<Delete><Object><VersionId>v</VersionId></Object></Delete>",
            "<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
            "<Delete><Object><Key>a</Key><VersionId>1</VersionId><VersionId>2</VersionId>"
            "</Object></Delete>",
            "<Delete><Object><Key>k</Key></Object><Object></Object></Delete>",
            "<Remove><Object><Key>k</Key></Object></Remove>",
            "<Delete><Object><Key>k</Key></Object>",
            "",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            CHECK_EQ_INT(hd_xml_parse_delete(bad[i], strlen(bad[i]), &d), HD_EMALFORMEDXML);
            CHECK(d.objs == NULL && d.n == 0);
        }
    }

    /* 1000 objects, pretty printed with deep indentation: OK; 1001: MalformedXML */
    hd_buf_init(&b);
    hd_buf_puts(&b, "<Delete xmlns=\"" HD_XML_S3_NS "\">\n");
    for (int i = 0; i < HD_XML_DELETE_MAX; i++)
        hd_buf_printf(&b,
                      "        <Object>\n            <Key>key-%04d-%s</Key>\n"
                      "            "
                      "<VersionId>3/"
                      "L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo</VersionId>\n"
                      "        </Object>\n",
                      i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    hd_buf_puts(&b, "</Delete>");
    CHECK_EQ_INT(hd_xml_parse_delete(b.data, b.len, &d), 0);
    CHECK_EQ_INT(d.n, HD_XML_DELETE_MAX);
    if (d.n == HD_XML_DELETE_MAX)
        CHECK(strncmp(d.objs[999].key, "key-0999-", 9) == 0);
    hd_xml_delete_cleanup(&d);
    b.len -= strlen("</Delete>");
    hd_buf_puts(&b, "<Object><Key>one-too-many</Key></Object></Delete>");
    CHECK_EQ_INT(hd_xml_parse_delete(b.data, b.len, &d), HD_EMALFORMEDXML);
    CHECK(d.n == 0);
    hd_buf_cleanup(&b);
}

HD_SUITE(xml_complete)
{
    struct hd_complete_req c;
    struct hd_buf b;

    CHECK_EQ_INT(hd_xml_parse_complete(boto_complete, strlen(boto_complete), &c), 0);
    CHECK_EQ_INT(c.n, 2);
    if (c.n == 2) {
        CHECK_EQ_INT(c.parts[0].part_number, 1);
        CHECK_EQ_STR(c.parts[0].etag, "e1");
        CHECK_EQ_INT(c.parts[0].nck, 1);
        CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[0], "CRC32"), "DUoRhQ==");
        CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[0], "crc32"), "DUoRhQ==");
        CHECK(hd_xml_part_checksum(&c.parts[0], "CRC32C") == NULL);
        CHECK_EQ_INT(c.parts[1].part_number, 2);
        CHECK_EQ_STR(c.parts[1].etag, "e2");
        CHECK_EQ_INT(c.parts[1].nck, 0);
    }
    hd_xml_complete_cleanup(&c);
    CHECK(c.parts == NULL && c.n == 0);
    hd_xml_complete_cleanup(NULL);

    /* out of order and duplicate numbers are kept as sent (the caller validates order);
     * &quot; etags, unquoted etags, several checksums, unknown elements, whitespace */
    {
        static const char body[] =
            "<CompleteMultipartUpload>\n"
            " <Part>\n  <PartNumber> 3 </PartNumber>\n"
            "  <ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag>\n"
            "  <ChecksumCRC32C>yZRlqg==</ChecksumCRC32C>\n"
            "  <ChecksumSHA256>47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=</ChecksumSHA256>\n"
            "  <ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME>\n"
            "  <Size>5</Size>\n"
            " </Part>\n"
            " <Part><ETag>abc</ETag><PartNumber>1</PartNumber></Part>\n"
            " <Part><ETag>\"\"</ETag><PartNumber>1</PartNumber></Part>\n"
            " <Part><ETag>\"x</ETag><PartNumber>10000</PartNumber></Part>\n"
            "</CompleteMultipartUpload>";
        CHECK_EQ_INT(hd_xml_parse_complete(body, strlen(body), &c), 0);
        CHECK_EQ_INT(c.n, 4);
        if (c.n == 4) {
            CHECK_EQ_INT(c.parts[0].part_number, 3);
            CHECK_EQ_STR(c.parts[0].etag, "d41d8cd98f00b204e9800998ecf8427e");
            CHECK_EQ_INT(c.parts[0].nck, 3);
            CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[0], "CRC32C"), "yZRlqg==");
            CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[0], "SHA256"),
                         "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
            CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[0], "CRC64NVME"), "AAAAAAAAAAA=");
            CHECK(hd_xml_part_checksum(&c.parts[0], "CRC32") == NULL);
            CHECK_EQ_INT(c.parts[1].part_number, 1);
            CHECK_EQ_STR(c.parts[1].etag, "abc");
            CHECK_EQ_STR(c.parts[2].etag, "");
            CHECK_EQ_INT(c.parts[3].part_number, 10000);
            CHECK_EQ_STR(c.parts[3].etag, "x");
        }
        hd_xml_complete_cleanup(&c);
    }

    {
        static const char *const bad[] = {
            "<CompleteMultipartUpload></CompleteMultipartUpload>",
            "<CompleteMultipartUpload/>",
            "<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag>"
            "</Part></CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>e</ETag></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>e</ETag></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber></PartNumber><ETag>e</ETag></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>99999999999999999999999</PartNumber>"
            "<ETag>e</ETag></Part></CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><PartNumber>2"
            "</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag>"
            "<ETag>f</ETag></Part></CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag>"
            "<ChecksumCRC32>a</ChecksumCRC32><ChecksumCRC32>b</ChecksumCRC32></Part>"
            "</CompleteMultipartUpload>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>"
            "<Part><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>",
            "<Complete><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></Complete>",
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            int rc = hd_xml_parse_complete(bad[i], strlen(bad[i]), &c);
            if (rc != HD_EMALFORMEDXML)
                fprintf(stderr, "  complete bad #%zu accepted\n", i);
            CHECK_EQ_INT(rc, HD_EMALFORMEDXML);
            CHECK(c.parts == NULL && c.n == 0);
        }
    }

    /* 10000 parts, each with a checksum, pretty printed (over 2 MiB, 40000+ elements) */
    hd_buf_init(&b);
    hd_buf_puts(
        &b,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload xmlns=\"" HD_XML_S3_NS
        "\">\n");
    for (int i = 1; i <= HD_XML_COMPLETE_MAX_PARTS; i++)
        hd_buf_printf(
            &b,
            "    <Part>\n        <ETag>\"0123456789abcdef0123456789abcdef\"</ETag>\n"
            "        <PartNumber>%d</PartNumber>\n"
            "        "
            "<ChecksumSHA256>47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=</ChecksumSHA256>\n"
            "        <ChecksumCRC32>DUoRhQ==</ChecksumCRC32>\n"
            "    </Part>\n",
            i);
    hd_buf_puts(&b, "</CompleteMultipartUpload>\n");
    CHECK(b.len > HD_XML_MAX_BODY);
    CHECK_EQ_INT(hd_xml_parse_complete(b.data, b.len, &c), 0);
    CHECK_EQ_INT(c.n, HD_XML_COMPLETE_MAX_PARTS);
    if (c.n == HD_XML_COMPLETE_MAX_PARTS) {
        CHECK_EQ_INT(c.parts[9999].part_number, 10000);
        CHECK_EQ_STR(c.parts[9999].etag, "0123456789abcdef0123456789abcdef");
        CHECK_EQ_STR(hd_xml_part_checksum(&c.parts[9999], "CRC32"), "DUoRhQ==");
    }
    hd_xml_complete_cleanup(&c);
    b.len -= strlen("</CompleteMultipartUpload>\n");
    hd_buf_puts(&b, "<Part><ETag>x</ETag><PartNumber>1</PartNumber></Part>"
                    "</CompleteMultipartUpload>\n");
    CHECK_EQ_INT(hd_xml_parse_complete(b.data, b.len, &c), HD_EMALFORMEDXML);
    CHECK(c.n == 0);
    hd_buf_cleanup(&b);
}

HD_SUITE(xml_create_bucket)
{
    char loc[32];

    CHECK_EQ_INT(hd_xml_parse_create_bucket(boto_create, strlen(boto_create), loc, sizeof(loc)), 0);
    CHECK_EQ_STR(loc, "eu-west-1");
    memset(loc, 'x', sizeof(loc));
    CHECK_EQ_INT(hd_xml_parse_create_bucket("", 0, loc, sizeof(loc)), 0);
    CHECK_EQ_STR(loc, "");
    memset(loc, 'x', sizeof(loc));
    CHECK_EQ_INT(hd_xml_parse_create_bucket(NULL, 0, loc, sizeof(loc)), 0);
    CHECK_EQ_STR(loc, "");
    CHECK_EQ_INT(hd_xml_parse_create_bucket(" \r\n\t", 4, loc, sizeof(loc)), 0);
    CHECK_EQ_STR(loc, "");
    {
        static const char b1[] = "<CreateBucketConfiguration/>";
        static const char b2[] = "<CreateBucketConfiguration><LocationConstraint>"
                                 "</LocationConstraint></CreateBucketConfiguration>";
        static const char b3[] = "<CreateBucketConfiguration xmlns=\"" HD_XML_S3_NS "\">\n"
                                 "  <LocationConstraint> us-west-2 </LocationConstraint>\n"
                                 "  <Bucket><Type>Directory</Type></Bucket>\n"
                                 "</CreateBucketConfiguration>";
        static const char b4[] = "<CreateBucketConfiguration><LocationConstraint>"
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa</LocationConstraint>"
                                 "</CreateBucketConfiguration>";
        static const char b5[] = "<BucketConfiguration><LocationConstraint>x"
                                 "</LocationConstraint></BucketConfiguration>";
        static const char b6[] = "<CreateBucketConfiguration><LocationConstraint>x";
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b1, strlen(b1), loc, sizeof(loc)), 0);
        CHECK_EQ_STR(loc, "");
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b2, strlen(b2), loc, sizeof(loc)), 0);
        CHECK_EQ_STR(loc, "");
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b3, strlen(b3), loc, sizeof(loc)), 0);
        CHECK_EQ_STR(loc, "us-west-2");
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b4, strlen(b4), loc, sizeof(loc)), HD_EBADARG);
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b3, strlen(b3), loc, 10), 0); /* exact fit */
        CHECK_EQ_STR(loc, "us-west-2");
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b3, strlen(b3), loc, 9), HD_EBADARG);
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b5, strlen(b5), loc, sizeof(loc)),
                     HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b6, strlen(b6), loc, sizeof(loc)),
                     HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_xml_parse_create_bucket("junk", 4, loc, sizeof(loc)), HD_EMALFORMEDXML);
        CHECK_EQ_INT(hd_xml_parse_create_bucket(b1, strlen(b1), loc, 0), HD_EBADARG);
    }
}
