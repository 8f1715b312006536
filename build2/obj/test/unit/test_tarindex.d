build2/obj/test/unit/test_tarindex.o: test/unit/test_tarindex.c \
 common/buf.h common/errors.h common/shardplan.h common/tarindex.h \
 test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/shardplan.h:
common/tarindex.h:
test/unit/hd_test.h:
