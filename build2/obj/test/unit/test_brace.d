build2/obj/test/unit/test_brace.o: test/unit/test_brace.c common/buf.h \
 common/errors.h common/brace.h test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/brace.h:
test/unit/hd_test.h:
