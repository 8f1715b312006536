build2/obj/target/store/tar.o: target/store/tar.c target/store/tar.h \
 target/store/store.h common/errors.h target/store/int.h common/cksum.h
target/store/tar.h:
target/store/store.h:
common/errors.h:
target/store/int.h:
common/cksum.h:
