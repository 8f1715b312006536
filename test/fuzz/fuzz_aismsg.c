/* libFuzzer driver for common/aismsg: AIStore bucket paths (?bck_to= of copy-bck), the
 * multi-object selections of prefetch/evict action messages, and mpt-complete messages. The input
 * is tried as a bucket path (a parsed name must be NUL-terminated inside its buffer and pass the
 * bucket rules) and as a JSON action value (args produced must hold exactly one of
 * names/template/prefix). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/aismsg.h"
#include "common/httputil.h"
#include "common/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char prov[8], name[64], msg[256], *buf;
    json_t *v, *args = NULL;
    struct hd_complete_req cr;
    size_t i;
    int n;

    if (!(buf = malloc(size + 1)))
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    if (hd_ais_bck_parse(buf, prov, sizeof(prov), name, sizeof(name), msg, sizeof(msg)) == 0 &&
        (strlen(name) >= sizeof(name) || hd_bucket_name_check(name) != 0 ||
         (strcmp(prov, "ais") != 0 && strcmp(prov, "aws") != 0)))
        abort();
    free(buf);
    if (!(v = json_loadb((const char *)data, size, JSON_ALLOW_NUL, NULL)))
        return 0;
    if (hd_ais_selection_args(v, size & 1, &args, msg, sizeof(msg)) == 0) {
        n = (json_object_get(args, "names") != NULL) + (json_object_get(args, "template") != NULL) +
            (json_object_get(args, "prefix") != NULL);
        if (n != 1)
            abort();
    } else if (args) {
        abort(); /* nothing is handed out on an error */
    }
    json_decref(args);
    if (hd_ais_mpt_complete_parse(v, &cr, msg, sizeof(msg)) == 0) {
        if (cr.n == 0 || cr.n > 10000)
            abort();
        for (i = 0; i < cr.n; i++) /* sorted, unique, in range, an ETag string */
            if (!cr.parts[i].etag || cr.parts[i].part_number < 1 ||
                cr.parts[i].part_number > 10000 ||
                (i && cr.parts[i].part_number <= cr.parts[i - 1].part_number))
                abort();
        hd_xml_complete_cleanup(&cr);
    } else if (cr.n || cr.parts) {
        abort();
    }
    json_decref(v);
    return 0;
}
