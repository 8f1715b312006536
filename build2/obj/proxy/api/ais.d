build2/obj/proxy/api/ais.o: proxy/api/ais.c proxy/api/api.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/cluster/cluster.h proxy/data/data.h common/cksum.h \
 common/errors.h common/jsonpack.h common/kdf.h common/metrics.h \
 common/token.h
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
proxy/data/data.h:
common/cksum.h:
common/errors.h:
common/jsonpack.h:
common/kdf.h:
common/metrics.h:
common/token.h:
