build2/obj/test/unit/test_httputil.o: test/unit/test_httputil.c \
 common/httputil.h common/buf.h common/errors.h test/unit/hd_test.h
common/httputil.h:
common/buf.h:
common/errors.h:
test/unit/hd_test.h:
