build2/obj/target/store/space.o: target/store/space.c common/buf.h \
 common/errors.h common/log.h target/store/int.h common/cksum.h \
 target/store/store.h
common/buf.h:
common/errors.h:
common/log.h:
target/store/int.h:
common/cksum.h:
target/store/store.h:
