build2/obj/common/http.o: common/http.c common/http.h common/httputil.h \
 common/buf.h common/cksum.h common/errors.h common/json.h common/log.h \
 common/metrics.h common/tls.h common/xml.h
common/http.h:
common/httputil.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/json.h:
common/log.h:
common/metrics.h:
common/tls.h:
common/xml.h:
