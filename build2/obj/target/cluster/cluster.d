build2/obj/target/cluster/cluster.o: target/cluster/cluster.c \
 target/cluster/cluster.h common/config.h common/http.h common/httputil.h \
 common/buf.h common/errors.h common/json.h common/log.h common/metrics.h \
 common/nodeauth.h common/pool.h common/smap.h common/ticker.h \
 common/tls.h target/store/store.h
target/cluster/cluster.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/errors.h:
common/json.h:
common/log.h:
common/metrics.h:
common/nodeauth.h:
common/pool.h:
common/smap.h:
common/ticker.h:
common/tls.h:
target/store/store.h:
