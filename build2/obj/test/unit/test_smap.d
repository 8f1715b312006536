build2/obj/test/unit/test_smap.o: test/unit/test_smap.c common/errors.h \
 common/smap.h test/unit/hd_test.h
common/errors.h:
common/smap.h:
test/unit/hd_test.h:
