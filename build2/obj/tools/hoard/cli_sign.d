build2/obj/tools/hoard/cli_sign.o: tools/hoard/cli_sign.c \
 tools/hoard/cli_sign.h common/sigv4.h tools/hoard/cli.h common/buf.h \
 common/errors.h
tools/hoard/cli_sign.h:
common/sigv4.h:
tools/hoard/cli.h:
common/buf.h:
common/errors.h:
