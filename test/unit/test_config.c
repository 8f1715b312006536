/* Unit tests for common/config: defaults, precedence default < file < env < argv, the
 * accepted argument and file syntax, error messages, --print-config and secret masking. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "test/unit/hd_test.h"

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))

/* Writes text to a fresh temp file; path receives its name (caller unlinks). */
static int write_tmp(char *path, size_t n, const char *text)
{
    FILE *f;
    int fd;

    snprintf(path, n, "/tmp/hd-config-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0)
        return -errno;
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -errno;
    }
    fputs(text, f);
    fclose(f);
    return 0;
}

/* Runs hd_config_load on a fresh config; *out gets the config (caller frees). */
static int load(struct hd_config **out, int argc, char **argv, char **envp, int *print, char *err,
                size_t errlen)
{
    *out = hd_config_new();
    if (!*out)
        return -ENOMEM;
    err[0] = '\0';
    return hd_config_load(*out, argc, argv, envp, print, err, errlen);
}

/* hd_config_print into a heap string (caller frees). */
static char *print_to_string(const struct hd_config *c)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);

    if (!f)
        return NULL;
    hd_config_print(c, f);
    fclose(f);
    return s;
}

/* The printed line of key (NUL-terminated copy in line), or "" when absent. */
static void print_line(const char *text, const char *key, char *line, size_t n)
{
    size_t kl = strlen(key);
    const char *p = text;

    line[0] = '\0';
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '=')) {
            snprintf(line, n, "%.*s", (int)len, p);
            return;
        }
        p = e ? e + 1 : NULL;
    }
}

/* Number of printed lines for key. */
static int key_lines(const char *text, const char *key)
{
    size_t kl = strlen(key);
    const char *p = text;
    int n = 0;

    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '='))
            n++;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return n;
}

HD_SUITE(config)
{
    char err[512], path[64], line[512];
    struct hd_config *c;
    int print, rc;

    unsetenv("HOARD_CONFIG"); /* the runner's environment must not leak in */

    /* Built-in defaults. */
    c = hd_config_new();
    CHECK(c != NULL);
    CHECK_EQ_STR(hd_config_str(c, "role"), "target");
    CHECK_EQ_STR(hd_config_str(c, "listen"), "127.0.0.1:8080");
    CHECK_EQ_STR(hd_config_str(c, "auth.keys"), "");
    CHECK_EQ_STR(hd_config_str(c, "s3.region"), "us-east-1");
    CHECK_EQ_STR(hd_config_str(c, "log.level"), "info");
    CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 60);
    CHECK_EQ_INT(hd_config_int(c, "http.max_conns"), 4096);
    CHECK_EQ_INT(hd_config_int(c, "http.threads"), 0);
    CHECK(hd_config_int(c, "store.max_object") == 5497558138880LL);
    CHECK_EQ_INT(hd_config_bool(c, "store.fsync"), 1);
    /* Unknown keys read as empty / zero, never crash. */
    CHECK_EQ_STR(hd_config_str(c, "no.such"), "");
    CHECK_EQ_INT(hd_config_int(c, "no.such"), 0);
    CHECK_EQ_INT(hd_config_bool(c, "no.such"), 0);

    /* No arguments, no environment: still the defaults, print stays 0. */
    {
        char *argv[] = {"hoardd"};
        print = 7;
        CHECK_EQ_INT(hd_config_load(c, ARGC(argv), argv, NULL, &print, err, sizeof(err)), 0);
        CHECK_EQ_INT(print, 0);
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 60);
    }
    hd_config_free(c);
    hd_config_free(NULL);

    /* hd_config_set validates and sets. */
    c = hd_config_new();
    CHECK_EQ_INT(hd_config_set(c, "http.timeout", "15", err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 15);
    CHECK_EQ_INT(hd_config_set(c, "http.timeout", "0", err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "http.timeout") != NULL);
    CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 15); /* a rejected value changes nothing */
    CHECK_EQ_INT(hd_config_set(c, "bogus", "1", err, sizeof(err)), -EINVAL);
    CHECK(strstr(err, "bogus") != NULL);
    CHECK_EQ_INT(hd_config_set(c, "store.fsync", "off", err, sizeof(err)), 0);
    CHECK_EQ_INT(hd_config_bool(c, "store.fsync"), 0);
    hd_config_free(c);

    /* Boolean spellings. */
    {
        static const struct {
            const char *v;
            int want;
        } bools[] = {{"true", 1},  {"1", 1}, {"yes", 1}, {"on", 1},
                     {"false", 0}, {"0", 0}, {"no", 0},  {"off", 0}};
        c = hd_config_new();
        for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
            CHECK_EQ_INT(hd_config_set(c, "store.fsync", bools[i].v, err, sizeof(err)), 0);
            CHECK_EQ_INT(hd_config_bool(c, "store.fsync"), bools[i].want);
        }
        hd_config_free(c);
    }

    /* Integer bounds are inclusive; overflow and junk are rejected. */
    {
        static const struct {
            const char *key, *v;
            int ok;
        } ints[] = {
            {"http.threads", "0", 1},
            {"http.threads", "256", 1},
            {"http.threads", "257", 0},
            {"http.threads", "-1", 0},
            {"http.timeout", "1", 1},
            {"http.timeout", "3600", 1},
            {"http.timeout", "3601", 0},
            {"http.timeout", "", 0},
            {"http.timeout", "12abc", 0},
            {"http.timeout", "abc", 0},
            {"http.timeout", "1.5", 0},
            {"http.max_conns", "15", 0},
            {"http.max_conns", "16", 1},
            {"store.max_object", "5497558138880", 1},
            {"store.max_object", "5497558138881", 0},
            {"store.max_object", "99999999999999999999999", 0},
        };
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
            c = hd_config_new();
            rc = hd_config_set(c, ints[i].key, ints[i].v, err, sizeof(err));
            if ((rc == 0) != ints[i].ok)
                fprintf(stderr, "  %s=%s: rc %d (%s)\n", ints[i].key, ints[i].v, rc, err);
            CHECK((rc == 0) == ints[i].ok);
            if (ints[i].ok)
                CHECK(hd_config_int(c, ints[i].key) == strtoll(ints[i].v, NULL, 10));
            else
                CHECK(strstr(err, ints[i].key) != NULL);
            hd_config_free(c);
        }
    }

    /* --key value and --key=value, --print-config anywhere. */
    {
        char *argv[] = {"hoardd",         "--listen",     "0.0.0.0:9000", "--http.timeout=33",
                        "--print-config", "--role=proxy", "--public_url", "http://h/?a=b"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(print, 1);
        CHECK_EQ_STR(hd_config_str(c, "listen"), "0.0.0.0:9000");
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 33);
        CHECK_EQ_STR(hd_config_str(c, "role"), "proxy");
        CHECK_EQ_STR(hd_config_str(c, "public_url"), "http://h/?a=b");
        hd_config_free(c);
    }
    {
        /* a value may itself contain '=' and may be empty */
        char *argv[] = {"hoardd", "--auth.keys=AK:S=K", "--log.access="};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(print, 0);
        CHECK_EQ_STR(hd_config_str(c, "auth.keys"), "AK:S=K");
        CHECK_EQ_STR(hd_config_str(c, "log.access"), "");
        hd_config_free(c);
    }

    /* A config file with comments, blank lines, indentation and spaces around '='. */
    CHECK_EQ_INT(write_tmp(path, sizeof(path),
                           "# hoard config\n"
                           "\n"
                           "   \n"
                           "listen = 10.0.0.1:81\n"
                           "  # indented comment\n"
                           "\thttp.timeout=10  \n"
                           "http.threads = 4\n"
                           "public_url = http://x/?q=1\n"
                           "store.fsync = no\n"
                           "s3.region=eu-west-1\n"),
                 0);
    {
        char *argv[] = {"hoardd", "--config", path};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        if (rc)
            fprintf(stderr, "  load: %s\n", err);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_STR(hd_config_str(c, "listen"), "10.0.0.1:81");
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 10);
        CHECK_EQ_INT(hd_config_int(c, "http.threads"), 4);
        CHECK_EQ_STR(hd_config_str(c, "public_url"), "http://x/?q=1");
        CHECK_EQ_INT(hd_config_bool(c, "store.fsync"), 0);
        CHECK_EQ_STR(hd_config_str(c, "s3.region"), "eu-west-1");
        CHECK_EQ_STR(hd_config_str(c, "role"), "target"); /* untouched: default */
        hd_config_free(c);
    }
    {
        char arg[128];
        snprintf(arg, sizeof(arg), "--config=%s", path);
        char *argv[] = {"hoardd", arg};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 10);
        hd_config_free(c);
    }

    /* Precedence: default < file < env < argv, key by key. */
    {
        char *envp[] = {"PATH=/usr/bin",
                        "HOARD_HTTP_TIMEOUT=20",
                        "HOARD_HTTP_THREADS=8",
                        "HOARD_AUTH_KEYS=AKID:supersecret",
                        "HOARD_ENDPOINT=http://cli/",
                        "HOARD_CLUSTER_SECRET=clustersecretvalue",
                        "hoard_s3_region=lower",
                        "HOARD_LOG_LEVEL",
                        NULL};
        char *argv[] = {"hoardd", "--http.timeout", "30", "--config", path};
        char *argv_noarg[] = {"hoardd", "--config", path};
        char *text;

        /* file + env: env wins over file where both set */
        rc = load(&c, ARGC(argv_noarg), argv_noarg, envp, &print, err, sizeof(err));
        if (rc)
            fprintf(stderr, "  load: %s\n", err);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 20);
        CHECK_EQ_INT(hd_config_int(c, "http.threads"), 8);
        CHECK_EQ_STR(hd_config_str(c, "listen"), "10.0.0.1:81");
        CHECK_EQ_STR(hd_config_str(c, "auth.keys"), "AKID:supersecret");
        CHECK_EQ_STR(hd_config_str(c, "s3.region"), "eu-west-1"); /* lowercase env ignored */
        CHECK_EQ_STR(hd_config_str(c, "log.level"), "info");
        hd_config_free(c);

        /* file + env + argv: argv wins, even when --config comes after it */
        rc = load(&c, ARGC(argv), argv, envp, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 30);
        CHECK_EQ_INT(hd_config_int(c, "http.threads"), 8);
        CHECK_EQ_STR(hd_config_str(c, "listen"), "10.0.0.1:81");
        CHECK_EQ_STR(hd_config_str(c, "role"), "target");

        /* print shows each value's source and masks the secret */
        text = print_to_string(c);
        CHECK(text != NULL);
        if (text) {
            CHECK(strstr(text, "supersecret") == NULL);
            CHECK(strstr(text, "AKID") == NULL);
            CHECK(strstr(text, "clustersecretvalue") == NULL);
            print_line(text, "auth.keys", line, sizeof(line));
            CHECK(strstr(line, "********") != NULL);
            CHECK(strstr(line, "(env)") != NULL);
            print_line(text, "http.timeout", line, sizeof(line));
            CHECK(strstr(line, "30") != NULL);
            CHECK(strstr(line, "(argv)") != NULL);
            print_line(text, "http.threads", line, sizeof(line));
            CHECK(strstr(line, " 8 ") != NULL);
            CHECK(strstr(line, "(env)") != NULL);
            print_line(text, "listen", line, sizeof(line));
            CHECK(strstr(line, "10.0.0.1:81") != NULL);
            CHECK(strstr(line, "(file)") != NULL);
            print_line(text, "role", line, sizeof(line));
            CHECK(strstr(line, "target") != NULL);
            CHECK(strstr(line, "(default)") != NULL);
            /* every setting is printed, on its own line, with its source */
            static const char *const keys[] = {
                "role",         "listen",         "public_url",     "data",
                "mountpaths",   "auth.keys",      "s3.region",      "http.threads",
                "http.timeout", "http.max_conns", "http.mem_limit", "log.level",
                "log.error",    "log.access",     "store.fsync",    "store.max_object"};
            size_t nl = 0, nsrc = 0;
            for (const char *q = text; *q; q++)
                nl += *q == '\n';
            for (const char *q = text; (q = strstr(q, ")\n")); q += 2)
                nsrc += q - text >= 8 &&
                        (!strncmp(q - 8, "(default", 8) || !strncmp(q - 5, "(file", 5) ||
                         !strncmp(q - 4, "(env", 4) || !strncmp(q - 5, "(argv", 5));
            CHECK(nl >= sizeof(keys) / sizeof(keys[0]));
            CHECK_EQ_INT(nsrc, nl);
            for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                print_line(text, keys[i], line, sizeof(line));
                if (!line[0])
                    fprintf(stderr, "  print: no line for %s\n", keys[i]);
                CHECK(line[0] != '\0');
                CHECK_EQ_INT(key_lines(text, keys[i]), 1);
            }
        }
        free(text);
        hd_config_free(c);
    }

    /* An empty secret is shown as empty, not as a mask (nothing to hide). */
    c = hd_config_new();
    {
        char *text = print_to_string(c);
        print_line(text ? text : "", "auth.keys", line, sizeof(line));
        CHECK(line[0] != '\0');
        CHECK(strstr(line, "********") == NULL);
        CHECK(strstr(line, "(default)") != NULL);
        free(text);
    }
    hd_config_free(c);

    /* The config file may also come from HOARD_CONFIG in the envp the caller passes (the
     * environment the rest of hd_config_load reads). */
    {
        char envvar[128];
        snprintf(envvar, sizeof(envvar), "HOARD_CONFIG=%s", path);
        char *envp[] = {envvar, NULL};
        char *argv[] = {"hoardd"};
        rc = load(&c, ARGC(argv), argv, envp, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(hd_config_int(c, "http.timeout"), 10); /* from the file */
        hd_config_free(c);
    }
    unlink(path);

    /* ---- errors: -EINVAL and a message naming the culprit ---- */
    {
        char *argv[] = {"hoardd", "--no.such.key", "1"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "no.such.key") != NULL);
        CHECK(strstr(err, "unknown") != NULL);
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "--http.timeout=0"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "http.timeout") != NULL);
        CHECK(strstr(err, "3600") != NULL); /* says what the range is */
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "--store.fsync", "maybe"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "store.fsync") != NULL);
        CHECK(strstr(err, "maybe") != NULL);
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "--role=proxy", "--listen"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "listen") != NULL);
        CHECK(strstr(err, "value") != NULL);
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "--config"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "config") != NULL);
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "stray"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "stray") != NULL);
        hd_config_free(c);
    }
    {
        char *envp[] = {"HOARD_HTTP_MAX_CONNS=lots", NULL};
        char *argv[] = {"hoardd"};
        rc = load(&c, ARGC(argv), argv, envp, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "HOARD_HTTP_MAX_CONNS") != NULL);
        CHECK(strstr(err, "lots") != NULL);
        hd_config_free(c);
    }
    {
        char *argv[] = {"hoardd", "--config", "/nonexistent/hoard.conf"};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, "/nonexistent/hoard.conf") != NULL);
        hd_config_free(c);
    }
    /* Malformed file line: path and line number in the message. */
    CHECK_EQ_INT(write_tmp(path, sizeof(path), "# ok\nlisten = a:1\njust-a-word\n"), 0);
    {
        char *argv[] = {"hoardd", "--config", path};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, path) != NULL);
        CHECK(strstr(err, ":3") != NULL);
        hd_config_free(c);
    }
    unlink(path);
    CHECK_EQ_INT(write_tmp(path, sizeof(path), "\n\nhttp.timeout = 5\nbad.key = 1\n"), 0);
    {
        char *argv[] = {"hoardd", "--config", path};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, path) != NULL);
        CHECK(strstr(err, ":4") != NULL);
        CHECK(strstr(err, "bad.key") != NULL);
        hd_config_free(c);
    }
    unlink(path);
    CHECK_EQ_INT(write_tmp(path, sizeof(path), "http.threads = 9999\n"), 0);
    {
        char *argv[] = {"hoardd", "--config", path};
        rc = load(&c, ARGC(argv), argv, NULL, &print, err, sizeof(err));
        CHECK_EQ_INT(rc, -EINVAL);
        CHECK(strstr(err, ":1") != NULL);
        CHECK(strstr(err, "http.threads") != NULL);
        hd_config_free(c);
    }
    unlink(path);
}
