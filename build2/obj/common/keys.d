build2/obj/common/keys.o: common/keys.c common/keys.h common/errors.h \
 common/http.h common/httputil.h common/buf.h common/log.h \
 common/metrics.h common/sigv2.h common/sigv4.h
common/keys.h:
common/errors.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/log.h:
common/metrics.h:
common/sigv2.h:
common/sigv4.h:
