build2/obj/target/object/archive.o: target/object/archive.c \
 target/object/archive.h common/http.h common/httputil.h common/buf.h \
 target/store/store.h common/errors.h common/json.h common/log.h \
 common/metrics.h common/tarindex.h target/object/object.h \
 target/store/tar.h
target/object/archive.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/store/store.h:
common/errors.h:
common/json.h:
common/log.h:
common/metrics.h:
common/tarindex.h:
target/object/object.h:
target/store/tar.h:
