build2/obj/tools/hoard/cmd_object.o: tools/hoard/cmd_object.c \
 common/httputil.h common/buf.h tools/hoard/cli.h tools/hoard/cli_fmt.h \
 tools/hoard/cli_http.h tools/hoard/cli_obj.h
common/httputil.h:
common/buf.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
tools/hoard/cli_http.h:
tools/hoard/cli_obj.h:
