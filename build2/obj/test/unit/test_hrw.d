build2/obj/test/unit/test_hrw.o: test/unit/test_hrw.c common/buf.h \
 common/hrw.h test/unit/hd_test.h
common/buf.h:
common/hrw.h:
test/unit/hd_test.h:
