build2/obj/common/smap.o: common/smap.c common/smap.h common/buf.h \
 common/cksum.h common/errors.h common/hrw.h common/http.h \
 common/httputil.h common/httpc.h common/nodeauth.h common/log.h
common/smap.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/hrw.h:
common/http.h:
common/httputil.h:
common/httpc.h:
common/nodeauth.h:
common/log.h:
