build2/obj/test/unit/main.o: test/unit/main.c test/unit/hd_test.h
test/unit/hd_test.h:
