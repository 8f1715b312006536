build2/obj/common/kdf.o: common/kdf.c common/kdf.h common/cksum.h
common/kdf.h:
common/cksum.h:
