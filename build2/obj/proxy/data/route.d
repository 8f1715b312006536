build2/obj/proxy/data/route.o: proxy/data/route.c proxy/data/data.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h common/errors.h common/hrw.h common/log.h \
 common/metrics.h
proxy/data/data.h:
proxy/core/core.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/httpc.h:
common/nodeauth.h:
common/keys.h:
common/pool.h:
common/relay.h:
common/sigv4.h:
common/smap.h:
common/ticker.h:
common/errors.h:
common/hrw.h:
common/log.h:
common/metrics.h:
