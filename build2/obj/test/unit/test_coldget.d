build2/obj/test/unit/test_coldget.o: test/unit/test_coldget.c \
 common/config.h common/errors.h common/http.h common/httputil.h \
 common/buf.h common/pool.h target/cache/cache.h common/bprops.h \
 common/s3client.h common/s3resp.h target/cluster/cluster.h \
 target/cluster/rebalance.h target/jobs/jobs.h target/store/store.h \
 test/unit/hd_test.h test/unit/hd_test_http.h
common/config.h:
common/errors.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/pool.h:
target/cache/cache.h:
common/bprops.h:
common/s3client.h:
common/s3resp.h:
target/cluster/cluster.h:
target/cluster/rebalance.h:
target/jobs/jobs.h:
target/store/store.h:
test/unit/hd_test.h:
test/unit/hd_test_http.h:
