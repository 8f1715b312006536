build2/obj/test/unit/test_buf.o: test/unit/test_buf.c common/buf.h \
 test/unit/hd_test.h
common/buf.h:
test/unit/hd_test.h:
