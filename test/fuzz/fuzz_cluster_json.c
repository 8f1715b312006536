/* libFuzzer driver for the JSON that nodes send each other (common/smap: smap, BMD, node
 * entries, metasync bodies; common/mpulist: ListMultipartUploads entries; common/httputil:
 * x-amz-copy-source and a map version (psv); common/cksum: base64 as in Content-MD5 and
 * x-amz-checksum-*). Anything accepted must serialise and parse back to the same thing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/cksum.h"
#include "common/httputil.h"
#include "common/mpulist.h"
#include "common/smap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void smap_roundtrip(const json_t *j)
{
    struct hd_smap *s = NULL, *s2 = NULL;
    json_t *back;

    if (hd_smap_from_json(j, &s) != 0)
        return;
    back = hd_smap_to_json(s);
    if (!back || hd_smap_from_json(back, &s2) != 0 || s2->version != s->version || s2->n != s->n)
        __builtin_trap();
    json_decref(back);
    hd_smap_unref(s);
    hd_smap_unref(s2);
}

static void bmd_roundtrip(const json_t *j)
{
    struct hd_bmd *b = NULL, *b2 = NULL;
    json_t *back;

    if (hd_bmd_from_json(j, &b) != 0)
        return;
    back = hd_bmd_to_json(b);
    if (!back || hd_bmd_from_json(back, &b2) != 0 || b2->version != b->version)
        __builtin_trap();
    json_decref(back);
    hd_bmd_unref(b);
    hd_bmd_unref(b2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    struct hd_smap *s = NULL;
    struct hd_bmd *b = NULL;
    struct hd_mpul l = {0};
    struct hd_node n;
    char *str, *cb, *ck;
    int64_t vt, vv;

    if (j) {
        smap_roundtrip(j);
        bmd_roundtrip(j);
        if (hd_smap_node_from_json(j, &n) == 0)
            hd_smap_node_cleanup(&n);
        if (hd_smap_parse_sync(j, &s, &b) == 0) {
            hd_smap_unref(s);
            hd_bmd_unref(b);
        }
        if (hd_mpul_from_json(j, &l) == 0)
            hd_mpul_finish(&l);
        hd_mpul_free(&l);
        json_decref(j);
    }
    /* the same bytes as base64 (Content-MD5, x-amz-checksum-*): what decodes re-encodes to
     * the same text */
    {
        unsigned char bin[512];
        char txt[1024];
        size_t blen;
        if (size < 600 && hd_b64_decode((const char *)data, size, bin, sizeof(bin), &blen) == 0) {
            if (hd_b64_encode(bin, blen, txt, sizeof(txt)) < 0 || strlen(txt) != size ||
                memcmp(txt, data, size) != 0)
                __builtin_trap();
        }
    }
    /* the same bytes as a copy source header */
    if ((str = malloc(size + 1))) {
        memcpy(str, data, size);
        str[size] = '\0';
        if (hd_copy_source_parse(str, &cb, &ck) == 0) {
            if (hd_bucket_name_check(cb) != 0 || hd_object_name_check(ck, strlen(ck)) != 0)
                __builtin_trap();
            free(cb);
            free(ck);
        }
        /* ... and as a map version (a redirect's psv, a relay's X-Hoard-Smap): what parses
         * prints back the same, leading zeros and signs aside */
        if (hd_smap_vparse(str, &vt, &vv) == 0) {
            struct hd_smap vs = {.term = vt, .version = vv};
            char back[HD_SMAP_VSTR_MAX];
            int64_t t2, v2;
            hd_smap_vstr(&vs, back);
            if (hd_smap_vparse(back, &t2, &v2) != 0 || t2 != vt || v2 != vv)
                __builtin_trap();
        }
        free(str);
    }
    return 0;
}
