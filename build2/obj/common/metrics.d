build2/obj/common/metrics.o: common/metrics.c common/metrics.h \
 common/buf.h
common/metrics.h:
common/buf.h:
