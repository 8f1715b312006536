build2/obj/target/cache/evict.o: target/cache/evict.c target/cache/int.h \
 common/pool.h common/http.h common/httputil.h common/buf.h \
 target/cache/cache.h common/bprops.h common/config.h common/s3client.h \
 common/s3resp.h target/cluster/cluster.h target/cluster/rebalance.h \
 target/jobs/jobs.h target/store/store.h common/log.h
target/cache/int.h:
common/pool.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/cache/cache.h:
common/bprops.h:
common/config.h:
common/s3client.h:
common/s3resp.h:
target/cluster/cluster.h:
target/cluster/rebalance.h:
target/jobs/jobs.h:
target/store/store.h:
common/log.h:
