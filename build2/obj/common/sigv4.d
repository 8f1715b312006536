build2/obj/common/sigv4.o: common/sigv4.c common/sigv4.h common/buf.h \
 common/httputil.h common/cksum.h common/errors.h
common/sigv4.h:
common/buf.h:
common/httputil.h:
common/cksum.h:
common/errors.h:
