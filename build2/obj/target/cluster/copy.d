build2/obj/target/cluster/copy.o: target/cluster/copy.c \
 target/cluster/copy.h target/cluster/cluster.h common/config.h \
 common/http.h common/httputil.h common/buf.h target/jobs/jobs.h \
 common/errors.h common/smap.h target/cluster/peer.h target/store/store.h \
 target/cluster/rebalance.h
target/cluster/copy.h:
target/cluster/cluster.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/jobs/jobs.h:
common/errors.h:
common/smap.h:
target/cluster/peer.h:
target/store/store.h:
target/cluster/rebalance.h:
