build2/obj/tools/hoard/cmd_cache.o: tools/hoard/cmd_cache.c \
 common/brace.h common/buf.h tools/hoard/cli.h tools/hoard/cli_fmt.h \
 tools/hoard/cli_http.h tools/hoard/cli_obj.h
common/brace.h:
common/buf.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
tools/hoard/cli_http.h:
tools/hoard/cli_obj.h:
