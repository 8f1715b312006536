build2/obj/test/unit/test_store.o: test/unit/test_store.c common/buf.h \
 common/errors.h common/hrw.h target/store/store.h target/store/int.h \
 common/cksum.h test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/hrw.h:
target/store/store.h:
target/store/int.h:
common/cksum.h:
test/unit/hd_test.h:
