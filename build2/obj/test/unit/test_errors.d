build2/obj/test/unit/test_errors.o: test/unit/test_errors.c \
 common/errors.h test/unit/hd_test.h
common/errors.h:
test/unit/hd_test.h:
