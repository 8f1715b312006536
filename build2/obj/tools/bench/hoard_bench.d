build2/obj/tools/bench/hoard_bench.o: tools/bench/hoard_bench.c
