/* Unit tests for tools/hoard/cli_fmt.c (pure helpers of the hoard CLI). */
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "test/unit/hd_test.h"
#include "tools/hoard/cli_fmt.h"

HD_SUITE(cli_fmt_size)
{
    char s[32];

    hd_cli_fmt_size(0, s, sizeof(s));
    CHECK_EQ_STR(s, "0 B");
    hd_cli_fmt_size(1023, s, sizeof(s));
    CHECK_EQ_STR(s, "1023 B");
    hd_cli_fmt_size(1024, s, sizeof(s));
    CHECK_EQ_STR(s, "1.0 KiB");
    hd_cli_fmt_size(1536, s, sizeof(s));
    CHECK_EQ_STR(s, "1.5 KiB");
    hd_cli_fmt_size(20u * 1024 * 1024, s, sizeof(s));
    CHECK_EQ_STR(s, "20.0 MiB");
    hd_cli_fmt_size(1024 * 1024 - 1, s, sizeof(s)); /* would round to 1024.0 KiB */
    CHECK_EQ_STR(s, "1.0 MiB");
    hd_cli_fmt_size(3ull << 40, s, sizeof(s));
    CHECK_EQ_STR(s, "3.0 TiB");
    hd_cli_fmt_size(UINT64_MAX, s, sizeof(s));
    CHECK_EQ_STR(s, "16.0 EiB");
    hd_cli_fmt_size(20u * 1024 * 1024, s, 4);
    CHECK_EQ_STR(s, "20.");
}

HD_SUITE(cli_fmt_progress)
{
    char s[128];

    hd_cli_fmt_progress(s, sizeof(s), 10u << 20, 20u << 20, 2.0);
    CHECK(strstr(s, "10.0 MiB / 20.0 MiB") != NULL);
    CHECK(strstr(s, " 50%") != NULL);
    CHECK(strstr(s, "5.0 MiB/s") != NULL);
    hd_cli_fmt_progress(s, sizeof(s), 30u << 20, 20u << 20, 0);
    CHECK(strstr(s, "100%") != NULL);
    CHECK(strstr(s, "0.0 MiB/s") != NULL);
    hd_cli_fmt_progress(s, sizeof(s), 1u << 20, 0, 1.0);
    CHECK(strchr(s, '%') == NULL);
    CHECK(strstr(s, "1.0 MiB") != NULL);
}

HD_SUITE(cli_path_split)
{
    char *b, *r;

    CHECK_EQ_INT(hd_cli_path_split("bk/a/b/c", &b, &r), 0);
    CHECK_EQ_STR(b, "bk");
    CHECK_EQ_STR(r, "a/b/c");
    free(b), free(r);
    CHECK_EQ_INT(hd_cli_path_split("bk", &b, &r), 0);
    CHECK_EQ_STR(b, "bk");
    CHECK_EQ_STR(r, "");
    free(b), free(r);
    CHECK_EQ_INT(hd_cli_path_split("bk/", &b, &r), 0);
    CHECK_EQ_STR(r, "");
    free(b), free(r);
    CHECK_EQ_INT(hd_cli_path_split("bk//x", &b, &r), 0);
    CHECK_EQ_STR(r, "/x");
    free(b), free(r);
    CHECK_EQ_INT(hd_cli_path_split("/o", &b, &r), HD_EBADARG);
    CHECK(b == NULL && r == NULL);
    CHECK_EQ_INT(hd_cli_path_split("", &b, &r), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_path_split(NULL, &b, &r), HD_EBADARG);
}

HD_SUITE(cli_path_encode)
{
    struct hd_buf b;

    hd_buf_init(&b);
    CHECK_EQ_INT(hd_cli_path_encode(&b, "a b/c%d/ü?#&+=~._-", 1), 0);
    CHECK_EQ_STR(b.data, "a%20b/c%25d/%C3%BC%3F%23%26%2B%3D~._-");
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_cli_path_encode(&b, "a/b", 0), 0);
    CHECK_EQ_STR(b.data, "a%2Fb");
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_cli_path_encode(&b, "//a//", 1), 0);
    CHECK_EQ_STR(b.data, "//a//");
    hd_buf_reset(&b);
    CHECK_EQ_INT(hd_cli_path_encode(&b, "", 1), 0);
    CHECK(b.len == 0);
    hd_buf_reset(&b);
    hd_buf_puts(&b, "/v1/buckets/x");
    CHECK_EQ_INT(hd_cli_query_add(&b, "prefix", "a/b c"), 0);
    CHECK_EQ_INT(hd_cli_query_add(&b, "token", "t+1="), 0);
    CHECK_EQ_STR(b.data, "/v1/buckets/x?prefix=a%2Fb%20c&token=t%2B1%3D");
    hd_buf_cleanup(&b);
}

HD_SUITE(cli_endpoint)
{
    char *o;

    CHECK_EQ_INT(hd_cli_endpoint_normalize("http://127.0.0.1:8080/", &o), 0);
    CHECK_EQ_STR(o, "http://127.0.0.1:8080");
    free(o);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("localhost:9", &o), 0);
    CHECK_EQ_STR(o, "http://localhost:9");
    free(o);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("HTTPS://h/prefix//", &o), 0);
    CHECK_EQ_STR(o, "HTTPS://h/prefix");
    free(o);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("ftp://h", &o), HD_EBADARG);
    CHECK(o == NULL);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("http://", &o), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("", &o), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("http://h?x", &o), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_endpoint_normalize("http:///x", &o), HD_EBADARG);
}

HD_SUITE(cli_parse_count)
{
    uint64_t v = 7;

    CHECK_EQ_INT(hd_cli_parse_count("10", 1, 100, &v), 0);
    CHECK_EQ_INT(v, 10);
    CHECK_EQ_INT(hd_cli_parse_count("0", 1, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count("101", 1, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count("-1", 0, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count(" 1", 0, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count("1x", 0, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count("", 0, 100, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_count("18446744073709551615", 0, UINT64_MAX, &v), 0);
    CHECK(v == UINT64_MAX);
    CHECK_EQ_INT(hd_cli_parse_count("18446744073709551616", 0, UINT64_MAX, &v), HD_EBADARG);
}

HD_SUITE(cli_etag_basename)
{
    char e[40];

    hd_cli_etag_clean("\"abc\"", e, sizeof(e));
    CHECK_EQ_STR(e, "abc");
    hd_cli_etag_clean("W/\"abc-2\"", e, sizeof(e));
    CHECK_EQ_STR(e, "abc-2");
    hd_cli_etag_clean("abc", e, sizeof(e));
    CHECK_EQ_STR(e, "abc");
    hd_cli_etag_clean("\"", e, sizeof(e));
    CHECK_EQ_STR(e, "\"");
    hd_cli_etag_clean(NULL, e, sizeof(e));
    CHECK_EQ_STR(e, "");
    hd_cli_etag_clean("\"0123456789\"", e, 5);
    CHECK_EQ_STR(e, "0123");
    CHECK_EQ_STR(hd_cli_basename("a/b/c.jpg"), "c.jpg");
    CHECK_EQ_STR(hd_cli_basename("c.jpg"), "c.jpg");
    CHECK_EQ_STR(hd_cli_basename("a/"), "");
}

HD_SUITE(cli_table)
{
    static const char *const h[] = {"NAME", "SIZE", "MODIFIED"};
    const char *r1[] = {"a", "1.0 KiB", "2026-01-01T00:00:00Z"};
    const char *r2[] = {"long\nname\xc3\xbc", "5 B", "-"};
    struct hd_cli_table t;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    hd_cli_table_init(&t, 3, h, 1u << 1);
    CHECK_EQ_INT(hd_cli_table_add(&t, r1), 0);
    CHECK_EQ_INT(hd_cli_table_add(&t, r2), 0);
    CHECK_EQ_INT(hd_cli_table_print(&t, f), 0);
    fclose(f);
    CHECK_EQ_STR(out, "NAME           SIZE  MODIFIED\n"
                      "a           1.0 KiB  2026-01-01T00:00:00Z\n"
                      "long?name\xc3\xbc      5 B  -\n");
    hd_cli_table_cleanup(&t);
    free(out);
}

HD_SUITE(cli_table_wide)
{
    static const char *const h[] = {"NAME", "SIZE"};
    const char *r1[] = {"\xe6\x97\xa5\xe6\x9c\xac", "1"}; /* two double-width characters */
    const char *r2[] = {"abcde", "2"};
    struct hd_cli_table t;
    char *out = NULL;
    size_t len = 0;
    FILE *f;

    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        return;
    f = open_memstream(&out, &len);
    hd_cli_table_init(&t, 2, h, 0);
    hd_cli_table_add(&t, r1);
    hd_cli_table_add(&t, r2);
    hd_cli_table_print(&t, f);
    fclose(f);
    CHECK_EQ_STR(out, "NAME   SIZE\n\xe6\x97\xa5\xe6\x9c\xac   1\nabcde  2\n");
    hd_cli_table_cleanup(&t);
    free(out);
    setlocale(LC_CTYPE, "C");
}

HD_SUITE(cli_fmt_job_progress)
{
    char s[160];

    /* both totals known: objects, then bytes with their percentage */
    hd_cli_fmt_job_progress(s, sizeof(s), 120, 400, 10u << 20, 40u << 20, 2.0);
    CHECK(strncmp(s, "120 / 400 objects ", 18) == 0);
    CHECK(strstr(s, "10.0 MiB / 40.0 MiB") != NULL);
    CHECK(strstr(s, " 25%") != NULL);
    CHECK(strstr(s, "5.0 MiB/s") != NULL);
    CHECK(strstr(s, "30%") == NULL);
    /* bytes total unknown: the percentage comes from the objects */
    hd_cli_fmt_job_progress(s, sizeof(s), 120, 400, 1u << 20, 0, 1.0);
    CHECK(strncmp(s, "120 / 400 objects   30% ", 24) == 0);
    CHECK(strstr(s, "1.0 MiB") != NULL);
    CHECK(strstr(s, " / ") == strstr(s, "120 / 400") + 3); /* no bytes total */
    /* nothing known: counts and rate only */
    hd_cli_fmt_job_progress(s, sizeof(s), 7, 0, 0, 0, 0);
    CHECK(strncmp(s, "7 objects ", 10) == 0);
    CHECK(strchr(s, '%') == NULL);
    /* more done than the total (objects added meanwhile) stays at 100% */
    hd_cli_fmt_job_progress(s, sizeof(s), 500, 400, 0, 0, 1.0);
    CHECK(strncmp(s, "500 / 400 objects  100% ", 24) == 0);
    /* truncation is safe */
    hd_cli_fmt_job_progress(s, 8, 120, 400, 0, 0, 1.0);
    CHECK_EQ_STR(s, "120 / 4");
}

HD_SUITE(cli_fmt_duration)
{
    char s[32];

    hd_cli_fmt_duration(0, s, sizeof(s));
    CHECK_EQ_STR(s, "0 ms");
    hd_cli_fmt_duration(999, s, sizeof(s));
    CHECK_EQ_STR(s, "999 ms");
    hd_cli_fmt_duration(1000, s, sizeof(s));
    CHECK_EQ_STR(s, "1.0 s");
    hd_cli_fmt_duration(3250, s, sizeof(s));
    CHECK_EQ_STR(s, "3.2 s");
    hd_cli_fmt_duration(59999, s, sizeof(s));
    CHECK_EQ_STR(s, "59.9 s");
    hd_cli_fmt_duration(245000, s, sizeof(s));
    CHECK_EQ_STR(s, "4m05s");
    hd_cli_fmt_duration(7380000, s, sizeof(s));
    CHECK_EQ_STR(s, "2h03m");
    hd_cli_fmt_duration(273600000ull, s, sizeof(s));
    CHECK_EQ_STR(s, "3d04h");
}

HD_SUITE(cli_pct_used)
{
    CHECK_EQ_INT(hd_cli_pct_used(0, 0), 0);
    CHECK_EQ_INT(hd_cli_pct_used(0, 100), 0);
    CHECK_EQ_INT(hd_cli_pct_used(50, 50), 50);
    CHECK_EQ_INT(hd_cli_pct_used(1, 999), 1); /* rounded up, as df does */
    CHECK_EQ_INT(hd_cli_pct_used(999, 1), 100);
    CHECK_EQ_INT(hd_cli_pct_used(20761034752ull, 81984245760ull), 21);
    CHECK_EQ_INT(hd_cli_pct_used(100, 0), 100);
    CHECK_EQ_INT(hd_cli_pct_used(UINT64_MAX, UINT64_MAX), 50);
}

HD_SUITE(cli_node_state)
{
    CHECK_EQ_STR(hd_cli_node_state(0, 0), "online");
    CHECK_EQ_STR(hd_cli_node_state(1, 0), "maintenance");
    CHECK_EQ_STR(hd_cli_node_state(2, 0), "decommissioning");
    CHECK_EQ_STR(hd_cli_node_state(3, 0), "decommissioning");
    CHECK_EQ_STR(hd_cli_node_state(5, 0), "maintenance-restart");
    CHECK_EQ_STR(hd_cli_node_state(7, 0), "decommissioning");
    CHECK_EQ_STR(hd_cli_node_state(0, 1), "down");
    CHECK_EQ_STR(hd_cli_node_state(1, 1), "down");
}

HD_SUITE(cli_parse_size)
{
    uint64_t v = 0;

    CHECK_EQ_INT(hd_cli_parse_size("100000", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(v, 100000);
    CHECK_EQ_INT(hd_cli_parse_size("256MiB", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(v, 256ull << 20);
    CHECK_EQ_INT(hd_cli_parse_size("1g", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(v, 1ull << 30);
    CHECK_EQ_INT(hd_cli_parse_size("64KiB", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(v, 65536);
    CHECK_EQ_INT(hd_cli_parse_size("5MB", UINT64_MAX, &v), 0);
    CHECK_EQ_INT(v, 5000000);
    CHECK_EQ_INT(hd_cli_parse_size("2TiB", 1ull << 40, &v), HD_EBADARG); /* above max */
    CHECK_EQ_INT(hd_cli_parse_size("0", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("MiB", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("12 MiB", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("12XB", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("99999999999999999999", UINT64_MAX, &v), HD_EBADARG);
    CHECK_EQ_INT(hd_cli_parse_size("17179869184GiB", UINT64_MAX, &v), HD_EBADARG); /* overflow */
}
