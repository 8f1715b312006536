/* libFuzzer driver for bucket policies (common/policy): the PutBucketPolicy body. Whatever is
 * accepted grants only what hoard enforces, the same when checked again, the same through
 * hd_policy_grants and hd_policy_read, which names keys only for a grant of some objects; and
 * it passes the property check as the JSON string the S3 front end stores. The first input byte picks the bucket name (with
 * its high bit set: the input is a PutPublicAccessBlock body instead). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/bprops.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Accepted: the canonical property, which passes its check and comes back the same through
 * the GET answer. */
static int pab(const char *body, size_t len)
{
    char *out = NULL, *again = NULL, msg[256];
    struct hd_buf b;
    json_t *v;
    int rc = hd_pab_parse_xml(body, len, &out, msg, sizeof(msg));

    if (rc < 0) {
        if ((rc != HD_EMALFORMEDXML && rc != -ENOMEM) || out)
            __builtin_trap();
        return 0;
    }
    if (!(v = json_loads(out, 0, NULL)) || hd_pab_check(v, msg, sizeof(msg)) != 0)
        __builtin_trap();
    hd_buf_init(&b);
    hd_pab_xml(&b, v);
    if (!b.oom &&
        (hd_pab_parse_xml(b.data, b.len, &again, msg, sizeof(msg)) != 0 || strcmp(again, out) != 0))
        __builtin_trap();
    hd_buf_cleanup(&b);
    json_decref(v);
    free(out);
    free(again);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const buckets[] = {"data", "b", "my.bucket-1", "datas"};
    const char *bucket, *doc;
    char msg[512], err[512], *nul, *props;
    struct hd_bprops bp;
    json_t *j;
    int g = -1, g2 = -1, rc;

    if (size < 1)
        return 0;
    if (data[0] & 0x80) /* a PutPublicAccessBlock body */
        return pab((const char *)data + 1, size - 1);
    bucket = buckets[data[0] % 4];
    doc = (const char *)data + 1;
    size--;
    rc = hd_policy_check(bucket, doc, size, &g, msg, sizeof(msg));
    if (rc < 0) {
        if (rc != HD_EMALFORMEDPOLICY && rc != HD_ENOTIMPL)
            __builtin_trap();
        if (g != 0 || !msg[0])
            __builtin_trap(); /* refused: grants nothing, says why */
        return 0;
    }
    if (g & ~(HD_POLICY_PUBLIC | HD_POLICY_TLS_ONLY))
        __builtin_trap();
    if (hd_policy_check(bucket, doc, size, &g2, msg, sizeof(msg)) != 0 || g2 != g)
        __builtin_trap();
    if (hd_policy_check(NULL, doc, size, &g2, msg, sizeof(msg)) != 0)
        __builtin_trap(); /* any bucket's form holds whatever this bucket's does */
    /* stored as a JSON string, read back as the property */
    if (!(j = json_pack("{s:s%}", "policy", doc, size)))
        return 0; /* not UTF-8 as a string (the check took it as JSON text) */
    props = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!props)
        return 0;
    if (hd_bprops_parse(props, &bp, err, sizeof(err)) != 0 || !bp.has_policy)
        __builtin_trap();
    free(props);
    /* a NUL inside the text makes it a shorter document for the C-string reader */
    if ((nul = memchr(doc, '\0', size)))
        return 0;
    {
        char *copy = malloc(size + 1);
        if (!copy)
            return 0;
        memcpy(copy, doc, size);
        copy[size] = '\0';
        if (hd_policy_grants(bucket, copy) != g)
            __builtin_trap();
        /* a key is public only by a grant: of every object (then any key is), or of some */
        {
            static const char *const keys[] = {"a", "public/x.jpg", "", "data/*", "??"};
            json_t *pats = NULL;
            size_t i;
            if (hd_policy_read(bucket, copy, &pats) != g)
                __builtin_trap(); /* the same grants with the keys read beside them */
            if (pats && (!(g & HD_POLICY_SOME_OBJECTS) || (g & HD_POLICY_OBJECTS)))
                __builtin_trap(); /* keys only for a grant of some objects */
            for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (hd_policy_patterns_match(pats, keys[i]) && !(g & HD_POLICY_SOME_OBJECTS))
                    __builtin_trap();
            json_decref(pats);
        }
        free(copy);
    }
    return 0;
}
