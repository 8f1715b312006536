build2/obj/target/store/mcache.o: target/store/mcache.c \
 target/store/int.h common/cksum.h target/store/store.h common/errors.h
target/store/int.h:
common/cksum.h:
target/store/store.h:
common/errors.h:
