/* Unit tests for common/token (bearer tokens) and common/jsonpack (JSON as msgpack). */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/errors.h"
#include "common/jsonpack.h"
#include "common/token.h"
#include "test/unit/hd_test.h"

HD_SUITE(token)
{
    char tok[HD_TOKEN_MAX], tok2[HD_TOKEN_MAX], who[64];
    const char *why;
    time_t exp = 0, now = 1800000000;
    char *mp;
    size_t len, off = 0;
    msgpack_unpacked u;
    json_t *j;

    CHECK_EQ_INT(hd_token_issue("s1", "AK", 60, now, tok, sizeof(tok)), 0);
    CHECK_EQ_INT(hd_token_verify("s1", tok, now, who, sizeof(who), &exp, &why), 0);
    CHECK_EQ_STR(who, "AK");
    CHECK_EQ_INT((long)exp, (long)(now + 60));
    /* rotation: issued with s1, verified by "s2,s1"; not by s2 alone */
    CHECK_EQ_INT(hd_token_verify("s2,s1", tok, now, who, sizeof(who), &exp, &why), 0);
    CHECK_EQ_INT(hd_token_verify("s2", tok, now, who, sizeof(who), &exp, &why), HD_EACCESS);
    /* expired, not yet issued */
    CHECK_EQ_INT(hd_token_verify("s1", tok, now + 60, who, sizeof(who), &exp, &why), HD_EEXPIRED);
    CHECK_EQ_INT(hd_token_verify("s1", tok, now - 301, who, sizeof(who), &exp, &why), HD_EACCESS);
    /* ttl capped; 0 = default */
    CHECK_EQ_INT(hd_token_issue("s1", "AK", 10L * HD_TOKEN_TTL_MAX, now, tok2, sizeof(tok2)), 0);
    CHECK_EQ_INT(hd_token_verify("s1", tok2, now, who, sizeof(who), &exp, &why), 0);
    CHECK_EQ_INT((long)exp, (long)(now + HD_TOKEN_TTL_MAX));
    CHECK_EQ_INT(hd_token_issue("s1", "AK", 0, now, tok2, sizeof(tok2)), 0);
    CHECK_EQ_INT(hd_token_verify("s1", tok2, now, who, sizeof(who), &exp, &why), 0);
    CHECK_EQ_INT((long)exp, (long)(now + HD_TOKEN_TTL_DEFAULT));
    /* tampering: a changed MAC, header "none", a user too long for the buffer */
    memcpy(tok2, tok, sizeof(tok));
    tok2[strlen(tok2) - 2] ^= 1;
    CHECK_EQ_INT(hd_token_verify("s1", tok2, now, who, sizeof(who), &exp, &why), HD_EACCESS);
    CHECK_EQ_INT(hd_token_verify("s1", "eyJhbGciOiJub25lIn0.eyJ1c2VybmFtZSI6IkFLIn0.", now, who,
                                 sizeof(who), &exp, &why),
                 HD_EACCESS);
    CHECK_EQ_INT(hd_token_verify("s1", tok, now, who, 2, &exp, &why), HD_EACCESS);
    CHECK_EQ_INT(hd_token_verify("s1", "a.b", now, who, sizeof(who), &exp, &why), HD_EACCESS);
    CHECK_EQ_INT(hd_token_verify("", tok, now, who, sizeof(who), &exp, &why), HD_EACCESS);
    /* no secret, no access key: no token */
    CHECK(hd_token_issue("", "AK", 60, now, tok2, sizeof(tok2)) < 0);
    CHECK(hd_token_issue("s1", "", 60, now, tok2, sizeof(tok2)) < 0);
    CHECK(hd_token_issue("s1", "AK", 60, now, tok2, 20) < 0);

    /* jsonpack: a map with the names and types the AIStore SDK decodes */
    j = json_pack("{s:s, s:I, s:[{s:s, s:b, s:n, s:f}]}", "UUID", "x", "Flags", (json_int_t)-3,
                  "Entries", "n", "a", "t", 1, "z", "r", 1.5);
    CHECK_EQ_INT(hd_jsonpack(j, &mp, &len), 0);
    msgpack_unpacked_init(&u);
    CHECK_EQ_INT(msgpack_unpack_next(&u, mp, len, &off), MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_INT((long)off, (long)len);
    CHECK_EQ_INT(u.data.type, MSGPACK_OBJECT_MAP);
    CHECK_EQ_INT(u.data.via.map.size, 3);
    CHECK_EQ_INT(u.data.via.map.ptr[0].key.via.str.size, 4);
    CHECK(memcmp(u.data.via.map.ptr[0].key.via.str.ptr, "UUID", 4) == 0);
    CHECK_EQ_INT(u.data.via.map.ptr[1].val.type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    CHECK_EQ_INT(u.data.via.map.ptr[2].val.type, MSGPACK_OBJECT_ARRAY);
    CHECK_EQ_INT(u.data.via.map.ptr[2].val.via.array.ptr[0].via.map.size, 4);
    msgpack_unpacked_destroy(&u);
    free(mp);
    json_decref(j);
    CHECK(hd_jsonpack_wanted("application/json, application/msgpack"));
    CHECK(!hd_jsonpack_wanted("application/json"));
    CHECK(!hd_jsonpack_wanted(NULL));
}
