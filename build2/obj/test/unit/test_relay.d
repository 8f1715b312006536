build2/obj/test/unit/test_relay.o: test/unit/test_relay.c common/cksum.h \
 common/errors.h common/http.h common/httputil.h common/buf.h \
 common/log.h common/relay.h test/unit/hd_test.h test/unit/hd_test_http.h
common/cksum.h:
common/errors.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/log.h:
common/relay.h:
test/unit/hd_test.h:
test/unit/hd_test_http.h:
