build2/obj/proxy/api/proxy.o: proxy/api/proxy.c proxy/proxy.h \
 common/config.h common/http.h common/httputil.h common/buf.h \
 proxy/api/api.h proxy/core/core.h common/httpc.h common/nodeauth.h \
 common/keys.h common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/cluster/cluster.h proxy/jobs/jobs.h \
 common/errors.h common/json.h common/log.h common/metrics.h \
 common/sigv2.h common/tls.h
proxy/proxy.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
proxy/api/api.h:
proxy/core/core.h:
common/httpc.h:
common/nodeauth.h:
common/keys.h:
common/pool.h:
common/relay.h:
common/sigv4.h:
common/smap.h:
common/ticker.h:
proxy/cluster/cluster.h:
proxy/jobs/jobs.h:
common/errors.h:
common/json.h:
common/log.h:
common/metrics.h:
common/sigv2.h:
common/tls.h:
