build2/obj/common/pool.o: common/pool.c common/pool.h common/http.h \
 common/httputil.h common/buf.h common/errors.h common/log.h
common/pool.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/errors.h:
common/log.h:
