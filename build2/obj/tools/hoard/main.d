build2/obj/tools/hoard/main.o: tools/hoard/main.c tools/hoard/cli.h \
 tools/hoard/cli_config.h tools/hoard/cli_fmt.h common/buf.h \
 tools/hoard/cli_http.h tools/hoard/cli_sign.h common/sigv4.h
tools/hoard/cli.h:
tools/hoard/cli_config.h:
tools/hoard/cli_fmt.h:
common/buf.h:
tools/hoard/cli_http.h:
tools/hoard/cli_sign.h:
common/sigv4.h:
