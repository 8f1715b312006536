build2/obj/test/unit/test_nodeauth.o: test/unit/test_nodeauth.c \
 test/unit/hd_test.h common/errors.h common/kdf.h common/nodeauth.h \
 common/http.h common/httputil.h common/buf.h
test/unit/hd_test.h:
common/errors.h:
common/kdf.h:
common/nodeauth.h:
common/http.h:
common/httputil.h:
common/buf.h:
