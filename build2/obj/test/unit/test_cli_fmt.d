build2/obj/test/unit/test_cli_fmt.o: test/unit/test_cli_fmt.c \
 common/errors.h test/unit/hd_test.h tools/hoard/cli_fmt.h common/buf.h
common/errors.h:
test/unit/hd_test.h:
tools/hoard/cli_fmt.h:
common/buf.h:
