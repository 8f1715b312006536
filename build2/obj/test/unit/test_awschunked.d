build2/obj/test/unit/test_awschunked.o: test/unit/test_awschunked.c \
 common/awschunked.h common/sigv4.h common/buf.h common/errors.h \
 test/unit/hd_test.h
common/awschunked.h:
common/sigv4.h:
common/buf.h:
common/errors.h:
test/unit/hd_test.h:
