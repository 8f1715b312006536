/* Unit tests for common/hrw: the AIStore placement vectors from DESIGN.md "Placement". */
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/hrw.h"
#include "test/unit/hd_test.h"

static const struct {
    const char *provider, *ns, *bucket, *object;
    const char *uname;
    uint64_t digest;
    int owner; /* index into t1,t2,t3 */
    uint64_t w[3];
} vec[] = {
    {"ais",
     NULL,
     "demo",
     "a.txt",
     "ais/@#/demo/a.txt",
     399386463518745780ull,
     1,
     {0x55697e7ea977d986ull, 0x703311257030d251ull, 0x6b273a4839061911ull}},
    {"aws",
     NULL,
     "mybucket",
     "images/dog.jpeg",
     "aws/@#/mybucket/images/dog.jpeg",
     4920624696789269065ull,
     0,
     {0xdaf5c8e09684a7eeull, 0xc00beae571393931ull, 0xc3d4a66608cba840ull}},
    {"ais",
     "@uuid1#ns1",
     "bck",
     "obj",
     "ais/@uuid1#ns1/bck/obj",
     12658736837621620828ull,
     1,
     {0x84f1e662b0c83c1cull, 0x86d142a136fa9f5eull, 0x5ead853efadbdec5ull}},
};

HD_SUITE(hrw)
{
    static const char *nodes[3] = {"t1", "t2", "t3"};
    uint64_t nd[3];

    for (int i = 0; i < 3; i++)
        nd[i] = hd_hrw_digest(nodes[i], 2);
    CHECK(nd[0] == 14214570646889990061ull);

    for (size_t v = 0; v < sizeof(vec) / sizeof(vec[0]); v++) {
        struct hd_buf b;
        uint64_t d;

        hd_buf_init(&b);
        CHECK_EQ_INT(hd_hrw_uname(&b, vec[v].provider, vec[v].ns, vec[v].bucket, vec[v].object), 0);
        CHECK_EQ_STR(b.data, vec[v].uname);
        d = hd_hrw_digest(b.data, b.len);
        CHECK(d == vec[v].digest);
        for (int i = 0; i < 3; i++)
            CHECK(hd_hrw_weight(nd[i], d) == vec[v].w[i]);
        CHECK_EQ_INT(hd_hrw_pick(nd, NULL, 3, d), vec[v].owner);
        hd_buf_cleanup(&b);
    }

    /* Skipping the owner hands the object to the next-highest weight. */
    {
        unsigned char skip[3] = {0, 1, 0};
        CHECK_EQ_INT(hd_hrw_pick(nd, skip, 3, vec[0].digest), 2); /* t3 > t1 for a.txt */
        skip[0] = skip[2] = 1;
        CHECK_EQ_INT(hd_hrw_pick(nd, skip, 3, vec[0].digest), -1);
        CHECK_EQ_INT(hd_hrw_pick(nd, NULL, 0, vec[0].digest), -1);
    }
}
