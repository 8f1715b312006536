build2/obj/common/httpc.o: common/httpc.c common/httpc.h common/buf.h \
 common/nodeauth.h common/http.h common/httputil.h common/log.h \
 common/tls.h
common/httpc.h:
common/buf.h:
common/nodeauth.h:
common/http.h:
common/httputil.h:
common/log.h:
common/tls.h:
