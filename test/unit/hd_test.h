/* hd_test: the unit-test runner's tiny API. Each test_<module>.c defines suites with
 * HD_SUITE(name) { ... CHECK(...); ... }; the runner (main.c) runs them all and ends with
 * "N passed, N failed". Run from test/unit/ so relative paths to vectors work. */
#ifndef HD_TEST_H
#define HD_TEST_H

#include <stdio.h>
#include <string.h>

void hd_test_register(const char *name, void (*fn)(void));
void hd_test_check(int ok, const char *expr, const char *file, int line);

#define HD_SUITE(name)                                                                             \
    static void suite_##name(void);                                                                \
    __attribute__((constructor)) static void reg_##name(void)                                      \
    {                                                                                              \
        hd_test_register(#name, suite_##name);                                                     \
    }                                                                                              \
    static void suite_##name(void)

#define CHECK(cond) hd_test_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            fprintf(stderr, "  %s = %lld, expected %lld\n", #a, a_, b_);                           \
        hd_test_check(a_ == b_, #a " == " #b, __FILE__, __LINE__);                                 \
    } while (0)
#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        int ok_ = a_ && b_ && strcmp(a_, b_) == 0;                                                 \
        if (!ok_)                                                                                  \
            fprintf(stderr, "  %s = \"%s\", expected \"%s\"\n", #a, a_ ? a_ : "(null)",            \
                    b_ ? b_ : "(null)");                                                           \
        hd_test_check(ok_, #a " == " #b, __FILE__, __LINE__);                                      \
    } while (0)

/* Registers fn to run once after every selected suite, before the summary line: a fixture
 * that several suites of one file share is torn down there (fn may CHECK). The last one
 * registered runs first. */
void hd_test_at_end(void (*fn)(void));

/* Reads a whole file into a NUL-terminated heap buffer (caller frees); NULL on error. */
char *hd_test_slurp(const char *path, size_t *len);

#endif
