build2/obj/target/store/scan.o: target/store/scan.c common/errors.h \
 target/store/int.h common/cksum.h target/store/store.h
common/errors.h:
target/store/int.h:
common/cksum.h:
target/store/store.h:
