build2/obj/tools/hoard/cmd_plan.o: tools/hoard/cmd_plan.c \
 tools/hoard/cli.h common/buf.h tools/hoard/cli_fmt.h \
 tools/hoard/cli_http.h
tools/hoard/cli.h:
common/buf.h:
tools/hoard/cli_fmt.h:
tools/hoard/cli_http.h:
