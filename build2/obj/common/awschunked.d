build2/obj/common/awschunked.o: common/awschunked.c common/awschunked.h \
 common/sigv4.h common/errors.h
common/awschunked.h:
common/sigv4.h:
common/errors.h:
