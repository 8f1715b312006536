/* kdf: HKDF against RFC 5869 case 1's construction checked with `openssl kdf`, and the
 * properties the callers rely on (distinct labels and ids give distinct keys). */
#include "test/unit/hd_test.h"

#include "common/kdf.h"

static void hex(const unsigned char *k, char out[65])
{
    static const char h[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = h[k[i] >> 4];
        out[2 * i + 1] = h[k[i] & 15];
    }
    out[64] = '\0';
}

HD_SUITE(kdf)
{
    static const char secret[] = "test-secret-please-change-0123456789";
    unsigned char k1[32], k2[32], k3[32];
    char h[65], mac[65];

    /* openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt key:test-secret-please-change-0123456789
     *   -kdfopt salt:hoard/v1 -kdfopt hexinfo:686f617264206e6f6465206b657900703161326233633464 HKDF */
    CHECK_EQ_INT(hd_kdf_key(secret, sizeof(secret) - 1, "hoard node key", "p1a2b3c4d", k1), 0);
    hex(k1, h);
    CHECK_EQ_STR(h, "7885599e3d717a0a92dba8cc334981191fe3ae95e8974e2bce19b0af9f0343b9");
    CHECK_EQ_INT(hd_kdf_key(secret, sizeof(secret) - 1, "hoard node key", "p1a2b3c4e", k2), 0);
    CHECK(memcmp(k1, k2, 32) != 0);
    CHECK_EQ_INT(hd_kdf_key(secret, sizeof(secret) - 1, "hoard token key", "p1a2b3c4d", k3), 0);
    CHECK(memcmp(k1, k3, 32) != 0);
    /* the NUL separator: label "a" + id "bc" differs from label "ab" + id "c" */
    CHECK_EQ_INT(hd_kdf_key(secret, 3, "a", "bc", k2), 0);
    CHECK_EQ_INT(hd_kdf_key(secret, 3, "ab", "c", k3), 0);
    CHECK(memcmp(k2, k3, 32) != 0);
    {
        char longid[200];
        memset(longid, 'x', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        CHECK(hd_kdf_key(secret, 3, "a", longid, k2) < 0);
    }
    /* RFC 4231 case 2: HMAC-SHA256("Jefe", "what do ya want for nothing?") */
    hd_kdf_hmac_hex((const unsigned char *)"Jefe", 4, "what do ya want for nothing?", 28, mac);
    CHECK_EQ_STR(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(hd_kdf_equal(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    CHECK(!hd_kdf_equal(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3842"));
    CHECK(!hd_kdf_equal(mac, "5bdc"));
    CHECK(!hd_kdf_equal(mac, NULL));
}
