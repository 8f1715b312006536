build2/obj/target/cluster/shard.o: target/cluster/shard.c \
 target/cluster/shard.h target/cluster/cluster.h common/config.h \
 common/http.h common/httputil.h common/buf.h target/jobs/jobs.h \
 common/errors.h common/httpc.h common/nodeauth.h common/log.h \
 common/tarstream.h target/object/archive.h target/store/store.h \
 target/cluster/peer.h
target/cluster/shard.h:
target/cluster/cluster.h:
common/config.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/jobs/jobs.h:
common/errors.h:
common/httpc.h:
common/nodeauth.h:
common/log.h:
common/tarstream.h:
target/object/archive.h:
target/store/store.h:
target/cluster/peer.h:
