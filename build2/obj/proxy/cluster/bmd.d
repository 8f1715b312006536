build2/obj/proxy/cluster/bmd.o: proxy/cluster/bmd.c \
 proxy/cluster/cluster.h proxy/core/core.h common/config.h common/http.h \
 common/httputil.h common/buf.h common/httpc.h common/nodeauth.h \
 common/keys.h common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/data/data.h common/bprops.h common/errors.h \
 common/log.h
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
proxy/data/data.h:
common/bprops.h:
common/errors.h:
common/log.h:
