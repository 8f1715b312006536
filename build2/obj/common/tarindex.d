build2/obj/common/tarindex.o: common/tarindex.c common/tarindex.h \
 common/errors.h
common/tarindex.h:
common/errors.h:
