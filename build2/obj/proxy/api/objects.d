build2/obj/proxy/api/objects.o: proxy/api/objects.c proxy/api/api.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/cluster/cluster.h common/errors.h common/metrics.h \
 proxy/data/data.h
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
proxy/cluster/cluster.h:
common/errors.h:
common/metrics.h:
proxy/data/data.h:
