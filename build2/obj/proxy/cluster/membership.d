build2/obj/proxy/cluster/membership.o: proxy/cluster/membership.c \
 proxy/cluster/cluster.h proxy/core/core.h common/config.h common/http.h \
 common/httputil.h common/buf.h common/httpc.h common/nodeauth.h \
 common/keys.h common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h common/cksum.h common/errors.h common/log.h \
 common/metrics.h
proxy/cluster/cluster.h:
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
common/cksum.h:
common/errors.h:
common/log.h:
common/metrics.h:
