build2/obj/common/brace.o: common/brace.c common/brace.h common/buf.h \
 common/errors.h
common/brace.h:
common/buf.h:
common/errors.h:
