build2/obj/common/ticker.o: common/ticker.c common/ticker.h common/log.h
common/ticker.h:
common/log.h:
