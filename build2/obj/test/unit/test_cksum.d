build2/obj/test/unit/test_cksum.o: test/unit/test_cksum.c common/cksum.h \
 common/errors.h test/unit/hd_test.h
common/cksum.h:
common/errors.h:
test/unit/hd_test.h:
