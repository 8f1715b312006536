build2/obj/test/unit/test_tarstream.o: test/unit/test_tarstream.c \
 common/batch.h common/http.h common/httputil.h common/buf.h \
 common/sigv4.h common/tarstream.h common/errors.h common/ring.h \
 common/tarindex.h test/unit/hd_test.h
common/batch.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/sigv4.h:
common/tarstream.h:
common/errors.h:
common/ring.h:
common/tarindex.h:
test/unit/hd_test.h:
