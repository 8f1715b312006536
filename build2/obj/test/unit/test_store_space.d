build2/obj/test/unit/test_store_space.o: test/unit/test_store_space.c \
 common/errors.h target/store/store.h test/unit/hd_test.h
common/errors.h:
target/store/store.h:
test/unit/hd_test.h:
