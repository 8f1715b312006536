build2/obj/common/config.o: common/config.c common/config.h common/log.h
common/config.h:
common/log.h:
