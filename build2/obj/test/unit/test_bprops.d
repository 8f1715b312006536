build2/obj/test/unit/test_bprops.o: test/unit/test_bprops.c \
 common/bprops.h common/errors.h test/unit/hd_test.h
common/bprops.h:
common/errors.h:
test/unit/hd_test.h:
