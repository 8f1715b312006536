build2/obj/common/xml.o: common/xml.c common/xml.h common/buf.h \
 common/errors.h common/httputil.h
common/xml.h:
common/buf.h:
common/errors.h:
common/httputil.h:
