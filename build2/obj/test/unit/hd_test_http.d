build2/obj/test/unit/hd_test_http.o: test/unit/hd_test_http.c \
 test/unit/hd_test_http.h common/http.h common/httputil.h common/buf.h
test/unit/hd_test_http.h:
common/http.h:
common/httputil.h:
common/buf.h:
