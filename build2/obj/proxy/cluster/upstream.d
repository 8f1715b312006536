build2/obj/proxy/cluster/upstream.o: proxy/cluster/upstream.c \
 proxy/cluster/cluster.h proxy/core/core.h common/config.h common/http.h \
 common/httputil.h common/buf.h common/httpc.h common/nodeauth.h \
 common/keys.h common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h common/bprops.h common/errors.h common/hrw.h \
 common/log.h common/s3client.h common/s3resp.h
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
common/bprops.h:
common/errors.h:
common/hrw.h:
common/log.h:
common/s3client.h:
common/s3resp.h:
