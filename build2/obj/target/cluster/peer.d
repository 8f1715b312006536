build2/obj/target/cluster/peer.o: target/cluster/peer.c \
 target/cluster/peer.h common/buf.h common/httputil.h \
 target/cluster/cluster.h common/config.h common/http.h \
 target/store/store.h common/errors.h common/hrw.h common/httpc.h \
 common/nodeauth.h common/smap.h common/log.h common/tls.h
target/cluster/peer.h:
common/buf.h:
common/httputil.h:
target/cluster/cluster.h:
common/config.h:
common/http.h:
target/store/store.h:
common/errors.h:
common/hrw.h:
common/httpc.h:
common/nodeauth.h:
common/smap.h:
common/log.h:
common/tls.h:
