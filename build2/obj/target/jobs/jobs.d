build2/obj/target/jobs/jobs.o: target/jobs/jobs.c target/jobs/jobs.h \
 common/http.h common/httputil.h common/buf.h common/errors.h \
 common/json.h common/log.h common/metrics.h
target/jobs/jobs.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/errors.h:
common/json.h:
common/log.h:
common/metrics.h:
