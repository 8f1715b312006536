build2/obj/tools/hoard/cmd_job.o: tools/hoard/cmd_job.c common/json.h \
 tools/hoard/cli.h tools/hoard/cli_fmt.h common/buf.h \
 tools/hoard/cli_http.h
common/json.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
common/buf.h:
tools/hoard/cli_http.h:
