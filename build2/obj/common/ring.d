build2/obj/common/ring.o: common/ring.c common/ring.h
common/ring.h:
