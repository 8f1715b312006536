build2/obj/common/errors.o: common/errors.c common/errors.h
common/errors.h:
