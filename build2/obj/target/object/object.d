build2/obj/target/object/object.o: target/object/object.c \
 target/object/object.h common/http.h common/httputil.h common/buf.h \
 target/store/store.h common/cksum.h common/errors.h common/json.h \
 common/metrics.h
target/object/object.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/store/store.h:
common/cksum.h:
common/errors.h:
common/json.h:
common/metrics.h:
