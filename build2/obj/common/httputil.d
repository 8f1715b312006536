build2/obj/common/httputil.o: common/httputil.c common/httputil.h \
 common/buf.h common/errors.h
common/httputil.h:
common/buf.h:
common/errors.h:
