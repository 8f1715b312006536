build2/obj/proxy/api/batch.o: proxy/api/batch.c proxy/api/api.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h common/batch.h common/tarstream.h common/json.h \
 common/errors.h common/metrics.h
proxy/api/api.h:
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
common/batch.h:
common/tarstream.h:
common/json.h:
common/errors.h:
common/metrics.h:
