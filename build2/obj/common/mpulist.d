build2/obj/common/mpulist.o: common/mpulist.c common/mpulist.h \
 common/buf.h common/errors.h common/http.h common/httputil.h \
 common/json.h common/xml.h
common/mpulist.h:
common/buf.h:
common/errors.h:
common/http.h:
common/httputil.h:
common/json.h:
common/xml.h:
