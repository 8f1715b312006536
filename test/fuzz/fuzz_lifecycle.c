/* libFuzzer driver for bucket lifecycle configurations (common/lifecycle): the
 * LifecycleConfiguration XML body of PutBucketLifecycleConfiguration and rule evaluation.
 * Whatever is accepted passes the property check, fits the size bound, and comes back
 * unchanged through the GetBucketLifecycleConfiguration answer; the input's tail (after a
 * NUL) is an object name evaluated against the rules at several times, where a rule that
 * expires an object at some time still expires it later. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/lifecycle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t days[] = {1000, 86400000};
    char *out = NULL, *again = NULL, msg[200], *name;
    json_t *rules, *tags;
    struct hd_buf b;
    size_t split = size, i;
    int rc, need_tags;

    if (memchr(data, '\0', size))
        split = (size_t)((const uint8_t *)memchr(data, '\0', size) - data);
    rc = hd_lc_parse_xml((const char *)data, split, &out, msg, sizeof(msg));
    if (rc < 0) {
        if (out || (rc != HD_EMALFORMEDXML && rc != HD_EBADARG && rc != HD_EBADREQ &&
                    rc != HD_ENOTIMPL && rc != -ENOMEM))
            __builtin_trap();
        return 0;
    }
    rules = json_loads(out, 0, NULL);
    if (!rules || hd_lc_check(rules, NULL, 0) != 0 || strlen(out) > HD_LC_JSON_MAX)
        __builtin_trap();
    hd_buf_init(&b);
    hd_lc_xml(&b, rules);
    if (!b.oom && (hd_lc_parse_xml(b.data, b.len, &again, msg, sizeof(msg)) != 0 || !again ||
                   strcmp(again, out) != 0))
        __builtin_trap();
    hd_buf_cleanup(&b);
    free(again);
    hd_lc_actions(rules, &need_tags);
    if (split < size && (name = strndup((const char *)data + split + 1, size - split - 1))) {
        tags = json_pack("{s:s}", "k", "v");
        for (i = 0; i < sizeof(days) / sizeof(days[0]); i++) {
            int64_t mtime = 1767225600123LL, t;
            int was = 0, now;
            for (t = mtime; t < mtime + 40 * days[i]; t += days[i] / 2 + 1) {
                now = hd_lc_expired(rules, name, strlen(name) * 7u, mtime, tags, t, days[i]);
                if (was && !now)
                    __builtin_trap(); /* expiry is monotonic in time */
                was = now;
                now = hd_lc_abort_due(rules, name, mtime, t, days[i]);
                if (now && hd_lc_abort_due(rules, name, mtime, t + days[i], days[i]) != 1)
                    __builtin_trap();
            }
        }
        json_decref(tags);
        free(name);
    }
    json_decref(rules);
    free(out);
    return 0;
}
