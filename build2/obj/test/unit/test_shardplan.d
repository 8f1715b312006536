build2/obj/test/unit/test_shardplan.o: test/unit/test_shardplan.c \
 common/buf.h common/errors.h common/shardplan.h test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/shardplan.h:
test/unit/hd_test.h:
