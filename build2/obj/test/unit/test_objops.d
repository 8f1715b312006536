build2/obj/test/unit/test_objops.o: test/unit/test_objops.c \
 common/config.h common/http.h common/httputil.h common/buf.h \
 target/target.h test/unit/hd_test.h test/unit/hd_test_http.h
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/target.h:
test/unit/hd_test.h:
test/unit/hd_test_http.h:
