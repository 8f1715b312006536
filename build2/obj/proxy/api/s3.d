build2/obj/proxy/api/s3.o: proxy/api/s3.c proxy/api/api.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/cluster/cluster.h proxy/data/data.h \
 common/errors.h common/log.h common/mpulist.h common/s3front.h \
 common/xml.h
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
common/errors.h:
common/log.h:
common/mpulist.h:
common/s3front.h:
common/xml.h:
