build2/obj/common/shardplan.o: common/shardplan.c common/shardplan.h \
 common/buf.h common/errors.h common/httputil.h
common/shardplan.h:
common/buf.h:
common/errors.h:
common/httputil.h:
