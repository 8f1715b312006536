build2/obj/test/unit/test_kdf.o: test/unit/test_kdf.c test/unit/hd_test.h \
 common/kdf.h
test/unit/hd_test.h:
common/kdf.h:
