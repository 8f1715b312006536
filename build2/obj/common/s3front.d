build2/obj/common/s3front.o: common/s3front.c common/s3front.h \
 common/buf.h common/http.h common/httputil.h common/sigv4.h common/xml.h \
 common/cksum.h common/errors.h common/json.h common/metrics.h
common/s3front.h:
common/buf.h:
common/http.h:
common/httputil.h:
common/sigv4.h:
common/xml.h:
common/cksum.h:
common/errors.h:
common/json.h:
common/metrics.h:
