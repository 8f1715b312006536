build2/obj/test/unit/test_store_tar.o: test/unit/test_store_tar.c \
 common/errors.h target/store/store.h target/store/tar.h \
 test/unit/hd_test.h
common/errors.h:
target/store/store.h:
target/store/tar.h:
test/unit/hd_test.h:
