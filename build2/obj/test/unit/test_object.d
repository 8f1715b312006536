build2/obj/test/unit/test_object.o: test/unit/test_object.c \
 common/errors.h target/object/object.h common/http.h common/httputil.h \
 common/buf.h target/store/store.h test/unit/hd_test.h
common/errors.h:
target/object/object.h:
common/http.h:
common/httputil.h:
common/buf.h:
target/store/store.h:
test/unit/hd_test.h:
