build2/obj/common/relay.o: common/relay.c common/relay.h common/http.h \
 common/httputil.h common/buf.h common/errors.h common/log.h \
 common/metrics.h common/ring.h common/tls.h
common/relay.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/errors.h:
common/log.h:
common/metrics.h:
common/ring.h:
common/tls.h:
