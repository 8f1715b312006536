build2/obj/target/cluster/rebalance.o: target/cluster/rebalance.c \
 target/cluster/rebalance.h target/cluster/cluster.h common/config.h \
 common/http.h common/httputil.h common/buf.h target/jobs/jobs.h \
 target/store/store.h common/errors.h common/hrw.h common/httpc.h \
 common/nodeauth.h common/log.h common/smap.h common/tls.h \
 target/cluster/peer.h target/object/object.h
target/cluster/rebalance.h:
target/cluster/cluster.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/jobs/jobs.h:
target/store/store.h:
common/errors.h:
common/hrw.h:
common/httpc.h:
common/nodeauth.h:
common/log.h:
common/smap.h:
common/tls.h:
target/cluster/peer.h:
target/object/object.h:
