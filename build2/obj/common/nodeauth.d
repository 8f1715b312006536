build2/obj/common/nodeauth.o: common/nodeauth.c common/nodeauth.h \
 common/http.h common/httputil.h common/buf.h common/cksum.h \
 common/errors.h common/kdf.h common/tls.h
common/nodeauth.h:
common/http.h:
common/httputil.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/kdf.h:
common/tls.h:
