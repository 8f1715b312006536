build2/obj/common/sigv2.o: common/sigv2.c common/sigv2.h common/sigv4.h \
 common/buf.h common/cksum.h common/errors.h common/httputil.h
common/sigv2.h:
common/sigv4.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/httputil.h:
