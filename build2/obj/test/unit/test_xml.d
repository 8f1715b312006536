build2/obj/test/unit/test_xml.o: test/unit/test_xml.c common/xml.h \
 common/buf.h common/errors.h test/unit/hd_test.h
common/xml.h:
common/buf.h:
common/errors.h:
test/unit/hd_test.h:
