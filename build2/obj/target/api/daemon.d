build2/obj/target/api/daemon.o: target/api/daemon.c target/api/internal.h \
 common/http.h common/httputil.h common/buf.h common/keys.h common/pool.h \
 common/sigv4.h target/cache/cache.h common/bprops.h common/config.h \
 common/s3client.h common/s3resp.h target/cluster/cluster.h \
 target/cluster/rebalance.h target/jobs/jobs.h target/store/store.h \
 target/object/object.h target/target.h common/errors.h common/json.h \
 common/metrics.h
target/api/internal.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/keys.h:
common/pool.h:
common/sigv4.h:
target/cache/cache.h:
common/bprops.h:
common/config.h:
common/s3client.h:
common/s3resp.h:
target/cluster/cluster.h:
target/cluster/rebalance.h:
target/jobs/jobs.h:
target/store/store.h:
target/object/object.h:
target/target.h:
common/errors.h:
common/json.h:
common/metrics.h:
