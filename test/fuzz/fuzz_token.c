/* libFuzzer driver for bearer tokens (common/token) and the msgpack re-encoding of JSON
 * (common/jsonpack). The input is a token as a client sends it after "Bearer ": verification
 * must not crash and must not accept anything but a token issued with the right key. A first
 * byte 'I' makes the driver issue a real token for the rest of the input as the access key
 * and mutate one byte of it, so the checks after the MAC are reached too. The input is also
 * parsed as JSON and, when it is, packed as msgpack. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/jsonpack.h"
#include "common/token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char secrets[] = "fuzz-new,fuzz-old";
    char *buf, tok[HD_TOKEN_MAX], who[256], *mp;
    const char *why;
    time_t exp;
    size_t len;
    json_t *j;
    int rc;

    if (!(buf = malloc(size + 1)))
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    rc = hd_token_verify(secrets, buf, 1700000000, who, sizeof(who), &exp, &why);
    if (rc == 0 && strlen(who) >= sizeof(who))
        abort();
    if (size > 2 && buf[0] == 'I' && strlen(buf + 2) > 0 &&
        hd_token_issue(secrets, buf + 2, 60, 1700000000, tok, sizeof(tok)) == 0) {
        if (hd_token_verify(secrets, tok, 1700000000, who, sizeof(who), &exp, &why) != 0 ||
            strcmp(who, buf + 2) != 0)
            abort(); /* a fresh token must verify */
        tok[(unsigned char)buf[1] % strlen(tok)] ^= 1;
        if (hd_token_verify(secrets, tok, 1700000000, who, sizeof(who), &exp, &why) == 0 &&
            strcmp(who, buf + 2) != 0)
            abort(); /* a flipped bit never yields another user */
    }
    if ((j = json_loadb((const char *)data, size, 0, NULL))) {
        if (hd_jsonpack(j, &mp, &len) == 0)
            free(mp);
        json_decref(j);
    }
    free(buf);
    return 0;
}
