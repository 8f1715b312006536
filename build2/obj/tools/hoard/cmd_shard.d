build2/obj/tools/hoard/cmd_shard.o: tools/hoard/cmd_shard.c \
 tools/hoard/cli.h tools/hoard/cli_fmt.h common/buf.h \
 tools/hoard/cli_http.h
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
common/buf.h:
tools/hoard/cli_http.h:
