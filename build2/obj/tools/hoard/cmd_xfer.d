build2/obj/tools/hoard/cmd_xfer.o: tools/hoard/cmd_xfer.c common/brace.h \
 common/buf.h common/errors.h common/json.h tools/hoard/cli.h \
 tools/hoard/cli_fmt.h tools/hoard/cli_http.h tools/hoard/cli_obj.h
common/brace.h:
common/buf.h:
common/errors.h:
common/json.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
tools/hoard/cli_http.h:
tools/hoard/cli_obj.h:
