build2/obj/common/s3client.o: common/s3client.c common/s3client.h \
 common/s3resp.h common/buf.h common/cksum.h common/errors.h \
 common/httputil.h common/log.h common/sigv4.h
common/s3client.h:
common/s3resp.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/httputil.h:
common/log.h:
common/sigv4.h:
