build2/obj/common/batch.o: common/batch.c common/batch.h common/http.h \
 common/httputil.h common/buf.h common/sigv4.h common/tarstream.h \
 common/cksum.h common/errors.h common/log.h common/ring.h \
 common/tarindex.h
common/batch.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/sigv4.h:
common/tarstream.h:
common/cksum.h:
common/errors.h:
common/log.h:
common/ring.h:
common/tarindex.h:
