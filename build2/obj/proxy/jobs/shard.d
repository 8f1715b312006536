build2/obj/proxy/jobs/shard.o: proxy/jobs/shard.c proxy/jobs/jobs.h \
 proxy/core/core.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/httpc.h common/nodeauth.h common/keys.h \
 common/pool.h common/relay.h common/sigv4.h common/smap.h \
 common/ticker.h proxy/data/data.h common/errors.h common/json.h \
 common/log.h common/shardplan.h
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
proxy/data/data.h:
common/errors.h:
common/json.h:
common/log.h:
common/shardplan.h:
