build2/obj/test/unit/test_tls.o: test/unit/test_tls.c test/unit/hd_test.h \
 common/tls.h
test/unit/hd_test.h:
common/tls.h:
