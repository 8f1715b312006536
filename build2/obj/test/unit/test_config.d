build2/obj/test/unit/test_config.o: test/unit/test_config.c \
 common/config.h test/unit/hd_test.h
common/config.h:
test/unit/hd_test.h:
