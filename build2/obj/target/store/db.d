build2/obj/target/store/db.o: target/store/db.c target/store/int.h \
 common/cksum.h target/store/store.h common/buf.h common/errors.h \
 common/hrw.h common/log.h
target/store/int.h:
common/cksum.h:
target/store/store.h:
common/buf.h:
common/errors.h:
common/hrw.h:
common/log.h:
