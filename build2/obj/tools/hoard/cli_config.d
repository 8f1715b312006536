build2/obj/tools/hoard/cli_config.o: tools/hoard/cli_config.c \
 tools/hoard/cli_config.h tools/hoard/cli.h tools/hoard/cli_fmt.h \
 common/buf.h
tools/hoard/cli_config.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
common/buf.h:
