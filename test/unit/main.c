/* Unit-test runner: runs every registered suite (optionally only those named on the
 * command line), then the cleanups registered with hd_test_at_end, and ends with
 * "N passed, N failed". Exit status 1 on any failure. */
#include "test/unit/hd_test.h"

#include <stdlib.h>

#define MAX_SUITES 256
#define MAX_AT_END 16

static struct {
    const char *name;
    void (*fn)(void);
} suites[MAX_SUITES];
static int nsuites;
static void (*at_end[MAX_AT_END])(void);
static int nat_end;
static int passed, failed;
static const char *current;

void hd_test_register(const char *name, void (*fn)(void))
{
    if (nsuites < MAX_SUITES) {
        suites[nsuites].name = name;
        suites[nsuites].fn = fn;
        nsuites++;
    } else {
        fprintf(stderr, "hd_test_register: more than %d suites, %s is not run\n", MAX_SUITES, name);
        failed++;
    }
}

void hd_test_at_end(void (*fn)(void))
{
    if (nat_end < MAX_AT_END) {
        at_end[nat_end++] = fn;
    } else {
        fprintf(stderr, "hd_test_at_end: more than %d cleanups\n", MAX_AT_END);
        failed++;
    }
}

void hd_test_check(int ok, const char *expr, const char *file, int line)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL [%s] %s:%d: %s\n", current, file, line, expr);
}

char *hd_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        p = malloc((size_t)n + 1);
        if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
            free(p);
            p = NULL;
        }
        if (p) {
            p[n] = '\0';
            if (len)
                *len = (size_t)n;
        }
    }
    fclose(f);
    return p;
}

int main(int argc, char **argv)
{
    int i, j;

    for (i = 0; i < nsuites; i++) {
        int want = argc < 2;
        for (j = 1; j < argc; j++)
            if (strcmp(argv[j], suites[i].name) == 0)
                want = 1;
        if (!want)
            continue;
        int before = failed;
        current = suites[i].name;
        suites[i].fn();
        printf("%-20s %s\n", suites[i].name, failed == before ? "ok" : "FAILED");
    }
    while (nat_end > 0) {
        int before = failed;
        current = "at-end";
        at_end[--nat_end]();
        if (failed != before)
            printf("%-20s FAILED\n", current);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
