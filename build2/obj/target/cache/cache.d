build2/obj/target/cache/cache.o: target/cache/cache.c \
 target/cache/cache.h common/bprops.h common/config.h common/http.h \
 common/httputil.h common/buf.h common/s3client.h common/s3resp.h \
 common/errors.h common/log.h common/metrics.h target/cache/int.h \
 common/pool.h target/cluster/cluster.h target/cluster/rebalance.h \
 target/jobs/jobs.h target/store/store.h
target/cache/cache.h:
common/bprops.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/s3client.h:
common/s3resp.h:
common/errors.h:
common/log.h:
common/metrics.h:
target/cache/int.h:
common/pool.h:
target/cluster/cluster.h:
target/cluster/rebalance.h:
target/jobs/jobs.h:
target/store/store.h:
