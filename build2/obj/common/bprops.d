build2/obj/common/bprops.o: common/bprops.c common/bprops.h \
 common/errors.h common/httputil.h common/buf.h
common/bprops.h:
common/errors.h:
common/httputil.h:
common/buf.h:
