build2/obj/test/unit/test_s3resp.o: test/unit/test_s3resp.c \
 common/errors.h common/s3resp.h test/unit/hd_test.h
common/errors.h:
common/s3resp.h:
test/unit/hd_test.h:
