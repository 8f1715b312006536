build2/obj/common/jsonpack.o: common/jsonpack.c common/jsonpack.h
common/jsonpack.h:
