build2/obj/server/main.o: server/main.c common/config.h common/errors.h \
 common/http.h common/httputil.h common/buf.h common/log.h common/tls.h \
 proxy/proxy.h target/target.h
common/config.h:
common/errors.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/log.h:
common/tls.h:
proxy/proxy.h:
target/target.h:
