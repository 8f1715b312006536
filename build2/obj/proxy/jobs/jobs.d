build2/obj/proxy/jobs/jobs.o: proxy/jobs/jobs.c proxy/jobs/jobs.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/cluster/cluster.h common/cksum.h common/errors.h \
 common/log.h
proxy/jobs/jobs.h:
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
common/cksum.h:
common/errors.h:
common/log.h:
