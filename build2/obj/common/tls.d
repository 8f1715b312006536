build2/obj/common/tls.o: common/tls.c common/tls.h common/errors.h
common/tls.h:
common/errors.h:
