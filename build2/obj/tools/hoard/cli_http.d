build2/obj/tools/hoard/cli_http.o: tools/hoard/cli_http.c \
 tools/hoard/cli_http.h common/buf.h tools/hoard/cli.h \
 tools/hoard/cli_fmt.h tools/hoard/cli_sign.h common/sigv4.h
tools/hoard/cli_http.h:
common/buf.h:
tools/hoard/cli.h:
tools/hoard/cli_fmt.h:
tools/hoard/cli_sign.h:
common/sigv4.h:
