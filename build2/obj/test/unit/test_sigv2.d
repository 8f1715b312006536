build2/obj/test/unit/test_sigv2.o: test/unit/test_sigv2.c common/buf.h \
 common/errors.h common/sigv2.h common/sigv4.h test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/sigv2.h:
common/sigv4.h:
test/unit/hd_test.h:
