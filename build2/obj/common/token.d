build2/obj/common/token.o: common/token.c common/token.h common/cksum.h \
 common/errors.h common/kdf.h
common/token.h:
common/cksum.h:
common/errors.h:
common/kdf.h:
