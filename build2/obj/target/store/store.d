build2/obj/target/store/store.o: target/store/store.c \
 target/store/store.h common/bprops.h common/buf.h common/cksum.h \
 common/errors.h common/hrw.h common/httputil.h common/log.h \
 target/store/int.h
target/store/store.h:
common/bprops.h:
common/buf.h:
common/cksum.h:
common/errors.h:
common/hrw.h:
common/httputil.h:
common/log.h:
target/store/int.h:
