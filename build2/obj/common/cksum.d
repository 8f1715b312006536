build2/obj/common/cksum.o: common/cksum.c common/cksum.h common/errors.h
common/cksum.h:
common/errors.h:
