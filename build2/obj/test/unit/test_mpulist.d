build2/obj/test/unit/test_mpulist.o: test/unit/test_mpulist.c \
 common/buf.h common/errors.h common/mpulist.h test/unit/hd_test.h
common/buf.h:
common/errors.h:
common/mpulist.h:
test/unit/hd_test.h:
