build2/obj/common/json.o: common/json.c common/json.h
common/json.h:
