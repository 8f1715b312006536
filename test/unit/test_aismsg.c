/* Unit tests for common/aismsg: AIStore bucket paths (?bck_to=) and multi-object selections
 * as hoard job args. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/aismsg.h"
#include "common/tarindex.h"
#include "common/errors.h"
#include "common/xml.h"
#include "test/unit/hd_test.h"

static int mpt(const char *doc, struct hd_complete_req *out)
{
    json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
    char msg[256] = "";
    int rc = hd_ais_mpt_complete_parse(j, out, msg, sizeof(msg));

    json_decref(j);
    if (rc < 0 && (out->n || out->parts || !msg[0]))
        return 1; /* nothing handed out, and a reason given */
    return rc;
}

static int sel(const char *value_json, int whole_ok, char *out, size_t outlen)
{
    json_t *v = value_json ? json_loads(value_json, JSON_ALLOW_NUL, NULL) : NULL, *args = NULL;
    char msg[256] = "";
    char *dump;
    int rc = hd_ais_selection_args(v, whole_ok, &args, msg, sizeof(msg));

    out[0] = '\0';
    if (rc == 0) {
        dump = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
        snprintf(out, outlen, "%s", dump ? dump : "");
        free(dump);
    } else {
        snprintf(out, outlen, "%s", msg);
    }
    json_decref(args);
    json_decref(v);
    return rc;
}

HD_SUITE(aismsg)
{
    char prov[8], name[64], msg[256], out[512];

    /* bck_to as the SDK's Bucket.get_path() writes it, and the short forms */
    CHECK_EQ_INT(
        hd_ais_bck_parse("ais/@#/dst/", prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)),
        0);
    CHECK_EQ_STR(prov, "ais");
    CHECK_EQ_STR(name, "dst");
    CHECK_EQ_INT(
        hd_ais_bck_parse("s3/b-1.x", prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)), 0);
    CHECK_EQ_STR(prov, "aws");
    CHECK_EQ_STR(name, "b-1.x");
    CHECK_EQ_INT(
        hd_ais_bck_parse("aws/@#/abc", prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)),
        0);
    CHECK_EQ_STR(prov, "aws");
    /* refused: namespaces, other providers, bad names, extra segments, empty, NULL */
    {
        static const char *const bad[] = {"ais/@uuid#ns/dst/",
                                          "ais/@#ns/dst/",
                                          "gcp/@#/dst/",
                                          "ais/@#/",
                                          "ais/@#/Dst/",
                                          "ais/@#/a/b/",
                                          "ais",
                                          "ais/@#/ab/",
                                          "/dst",
                                          "",
                                          "ais/@#/..x/",
                                          NULL};
        size_t i;
        for (i = 0; bad[i]; i++)
            CHECK_EQ_INT(
                hd_ais_bck_parse(bad[i], prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)),
                HD_EBADARG);
        CHECK_EQ_INT(
            hd_ais_bck_parse(NULL, prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)),
            HD_EBADARG);
    }
    /* a name longer than the caller's buffer */
    CHECK_EQ_INT(
        hd_ais_bck_parse("ais/@#/abcdefgh/", prov, sizeof(prov), name, 5, msg, sizeof(msg)),
        HD_EBADARG);

    /* selections */
    CHECK_EQ_INT(sel("{\"objnames\":[\"a\",\"b/c\"],\"coer\":true,\"latest-ver\":false}", 1, out,
                     sizeof(out)),
                 0);
    CHECK_EQ_STR(out, "{\"names\":[\"a\",\"b/c\"]}");
    CHECK_EQ_INT(sel("{\"template\":\"s-{00..09}.tar\",\"latest-ver\":true}", 1, out, sizeof(out)),
                 0);
    CHECK_EQ_STR(out, "{\"revalidate\":true,\"template\":\"s-{00..09}.tar\"}");
    CHECK_EQ_INT(sel("{\"template\":\"imgs/\"}", 1, out, sizeof(out)), 0);
    CHECK_EQ_STR(out, "{\"prefix\":\"imgs/\"}");
    CHECK_EQ_INT(sel("{\"template\":\"\"}", 1, out, sizeof(out)), 0);
    CHECK_EQ_STR(out, "{\"prefix\":\"\"}");
    CHECK_EQ_INT(sel(NULL, 1, out, sizeof(out)), 0);
    CHECK_EQ_STR(out, "{\"prefix\":\"\"}");
    CHECK_EQ_INT(sel("{}", 0, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"template\":\"\"}", 0, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"objnames\":[\"a\"],\"template\":\"t{0..1}\"}", 1, out, sizeof(out)),
                 HD_EBADARG);
    CHECK_EQ_INT(sel("{\"objnames\":\"a\"}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"objnames\":[]}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"objnames\":[\"\"]}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"objnames\":[\"ok\",3]}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK(strstr(out, "objnames[1]") != NULL);
    CHECK_EQ_INT(sel("{\"objnames\":[\"a\\u0000b\"]}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK_EQ_INT(sel("{\"template\":5}", 1, out, sizeof(out)), HD_EBADARG);
    /* a brace template that does not parse is refused here, with the parser's reason */
    CHECK_EQ_INT(sel("{\"template\":\"a-{0..4\"}", 1, out, sizeof(out)), HD_EBADARG);
    CHECK(strncmp(out, "template: ", 10) == 0);
    CHECK_EQ_INT(sel("[1]", 1, out, sizeof(out)), HD_EBADARG);
    /* the SDK's ObjectNames with an empty template beside the names */
    CHECK_EQ_INT(sel("{\"objnames\":[\"a\"],\"template\":\"\"}", 1, out, sizeof(out)), 0);
    CHECK_EQ_STR(out, "{\"names\":[\"a\"]}");

    /* mpt-complete (obj/multipart_upload.py complete()): sorted, "" matches any ETag */
    {
        struct hd_complete_req cr;
        CHECK_EQ_INT(mpt("{\"action\":\"mpt-complete\",\"name\":\"\",\"value\":["
                         "{\"part-number\":2,\"etag\":\"\"},{\"part-number\":1,"
                         "\"etag\":\"\\\"abc\\\"\"}]}",
                         &cr),
                     0);
        CHECK_EQ_INT((int)cr.n, 2);
        CHECK_EQ_INT((int)cr.parts[0].part_number, 1);
        CHECK_EQ_STR(cr.parts[0].etag, "abc");
        CHECK_EQ_INT(cr.parts[0].any_etag, 0);
        CHECK_EQ_INT((int)cr.parts[1].part_number, 2);
        CHECK_EQ_INT(cr.parts[1].any_etag, 1);
        hd_xml_complete_cleanup(&cr);
        CHECK_EQ_INT(mpt("{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":7}]}", &cr), 0);
        CHECK_EQ_INT(cr.parts[0].any_etag, 1);
        hd_xml_complete_cleanup(&cr);
        static const char *const bad[] = {
            NULL,
            "[]",
            "{\"action\":\"mpt-abort\",\"value\":[{\"part-number\":1}]}",
            "{\"action\":\"mpt-complete\",\"value\":[]}",
            "{\"action\":\"mpt-complete\",\"value\":{}}",
            "{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":0}]}",
            "{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":10001}]}",
            "{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":\"1\"}]}",
            "{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":1,\"etag\":5}]}",
            "{\"action\":\"mpt-complete\",\"value\":[{\"part-number\":3},{\"part-number\":3}]}",
            "{\"action\":\"mpt-complete\",\"value\":[7]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            CHECK_EQ_INT(mpt(bad[i], &cr), HD_EBADARG);
    }
}

/* The archive format a "mime" (or, without one, the name's extension) names. */
HD_SUITE(aismsg_archive_format)
{
    CHECK_EQ_INT(hd_ais_archive_format(NULL, NULL), HD_ARCH_TAR);
    CHECK_EQ_INT(hd_ais_archive_format("", "shard-1"), HD_ARCH_TAR);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.tar"), HD_ARCH_TAR);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.tgz"), HD_ARCH_TGZ);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.tar.gz"), HD_ARCH_TGZ);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.zip"), HD_ARCH_ZIP);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.tar.lz4"), HD_ARCH_TLZ4);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.tar.zst"), HD_ARCH_TZST);
    CHECK_EQ_INT(hd_ais_archive_format(NULL, "a.rar"), HD_ARCH_TAR); /* no known extension */
    CHECK_EQ_INT(hd_ais_archive_format(".tar", "a.zip"), HD_ARCH_TAR); /* mime wins */
    CHECK_EQ_INT(hd_ais_archive_format("tar", NULL), HD_ARCH_TAR);
    CHECK_EQ_INT(hd_ais_archive_format("application/x-tar", NULL), HD_ARCH_TAR);
    CHECK_EQ_INT(hd_ais_archive_format(".tgz", NULL), HD_ARCH_TGZ);
    CHECK_EQ_INT(hd_ais_archive_format("tar.gz", "a.tar"), HD_ARCH_TGZ);
    CHECK_EQ_INT(hd_ais_archive_format(".zip", NULL), HD_ARCH_ZIP);
    CHECK_EQ_INT(hd_ais_archive_format("tar.lz4", NULL), HD_ARCH_TLZ4);
    CHECK_EQ_INT(hd_ais_archive_format(".tar.zst", NULL), HD_ARCH_TZST);
    CHECK_EQ_INT(hd_ais_archive_format("application/zip", NULL), -1);
    CHECK_EQ_INT(hd_ais_archive_format("gz", NULL), -1);
    CHECK_EQ_INT(hd_ais_archive_format(".tar.xz", NULL), -1);
}

/* Format names of the native batch and shard job arguments, and what each writes. */
HD_SUITE(arch_fmt_names)
{
    static const char *const names[] = {"tar", "tar.gz", "tar.lz4", "tar.zst", "zip"};
    int i;

    for (i = 0; i < 5; i++) {
        CHECK_EQ_INT(hd_arch_fmt_parse(names[i]), i);
        CHECK_EQ_STR(hd_arch_fmt_name(i), names[i]);
    }
    CHECK_EQ_INT(hd_arch_fmt_parse(".tgz"), HD_ARCH_TGZ);
    CHECK_EQ_INT(hd_arch_fmt_parse("tar.zstd"), HD_ARCH_TZST);
    CHECK_EQ_INT(hd_arch_fmt_parse(".zip"), HD_ARCH_ZIP);
    CHECK_EQ_INT(hd_arch_fmt_parse("ZIP"), -1);
    CHECK_EQ_INT(hd_arch_fmt_parse(""), -1);
    CHECK_EQ_INT(hd_arch_fmt_parse(NULL), -1);
    CHECK_EQ_INT(hd_arch_fmt_parse("tar.xz"), -1);
    CHECK_EQ_STR(hd_arch_fmt_ctype(HD_ARCH_ZIP), "application/zip");
    CHECK_EQ_STR(hd_arch_fmt_ctype(HD_ARCH_TGZ), "application/gzip");
}
