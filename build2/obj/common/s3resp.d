build2/obj/common/s3resp.o: common/s3resp.c common/s3resp.h \
 common/errors.h common/httputil.h common/buf.h common/xml.h
common/s3resp.h:
common/errors.h:
common/httputil.h:
common/buf.h:
common/xml.h:
