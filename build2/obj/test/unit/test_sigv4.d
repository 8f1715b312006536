build2/obj/test/unit/test_sigv4.o: test/unit/test_sigv4.c common/buf.h \
 common/cksum.h common/errors.h common/sigv4.h test/unit/hd_test.h
common/buf.h:
common/cksum.h:
common/errors.h:
common/sigv4.h:
test/unit/hd_test.h:
