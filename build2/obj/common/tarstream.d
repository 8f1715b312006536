build2/obj/common/tarstream.o: common/tarstream.c common/tarstream.h \
 common/http.h common/httputil.h common/buf.h common/errors.h \
 common/tarindex.h common/tls.h
common/tarstream.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/errors.h:
common/tarindex.h:
common/tls.h:
