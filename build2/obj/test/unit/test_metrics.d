build2/obj/test/unit/test_metrics.o: test/unit/test_metrics.c \
 common/buf.h common/metrics.h test/unit/hd_test.h
common/buf.h:
common/metrics.h:
test/unit/hd_test.h:
