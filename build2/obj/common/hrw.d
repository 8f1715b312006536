build2/obj/common/hrw.o: common/hrw.c common/hrw.h common/buf.h
common/hrw.h:
common/buf.h:
