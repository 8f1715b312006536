build2/obj/test/unit/test_log.o: test/unit/test_log.c common/log.h \
 test/unit/hd_test.h
common/log.h:
test/unit/hd_test.h:
