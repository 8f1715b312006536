build2/obj/tools/hoard/cli_fmt.o: tools/hoard/cli_fmt.c \
 tools/hoard/cli_fmt.h common/buf.h common/errors.h
tools/hoard/cli_fmt.h:
common/buf.h:
common/errors.h:
