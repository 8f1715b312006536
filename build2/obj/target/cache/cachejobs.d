build2/obj/target/cache/cachejobs.o: target/cache/cachejobs.c \
 target/cache/int.h common/pool.h common/http.h common/httputil.h \
 common/buf.h target/cache/cache.h common/bprops.h common/config.h \
 common/s3client.h common/s3resp.h target/cluster/cluster.h \
 target/cluster/rebalance.h target/jobs/jobs.h target/store/store.h \
 common/errors.h common/hrw.h common/log.h common/smap.h common/brace.h
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
common/errors.h:
common/hrw.h:
common/log.h:
common/smap.h:
common/brace.h:
