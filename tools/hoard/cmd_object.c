/* cmd_object: `hoard object put|get|head|ls|rm`. Transfers stream (never buffer the object),
 * are checked against the server's MD5 ETag, and a failed download leaves no file behind. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "common/httputil.h"
#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"
#include "tools/hoard/cli_obj.h"

#define LIST_PAGE_MAX 10000 /* the server's largest page */

/* A parsed B/O argument and everything derived from it. */
struct target {
    char *bucket;
    char *name;         /* object name or listing prefix ("" when absent) */
    struct hd_buf path; /* encoded request path */
    struct hd_buf what; /* "object get b/o", for error lines */
};

static void target_cleanup(struct target *t)
{
    free(t->bucket);
    free(t->name);
    hd_buf_cleanup(&t->path);
    hd_buf_cleanup(&t->what);
}

/* Splits arg into bucket and object name; need_name requires a non-empty object name.
 * Returns 0 or an exit code (usage error already printed). */
static int target_init(struct hd_cli *cli, struct target *t, const char *arg, int need_name)
{
    int rc;

    memset(t, 0, sizeof(*t));
    hd_buf_init(&t->path);
    hd_buf_init(&t->what);
    rc = hd_cli_path_split(arg, &t->bucket, &t->name);
    if (rc == -ENOMEM)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (rc < 0)
        return hd_cli_usage_error(cli, "bad path '%s': want BUCKET/%s", arg,
                                  need_name ? "OBJECT" : "[PREFIX]");
    if (need_name && t->name[0] == '\0')
        return hd_cli_usage_error(cli, "bad path '%s': missing object name (want BUCKET/OBJECT)",
                                  arg);
    return 0;
}

/* Fills t->path ("/v1/objects/B/O") and t->what; call after t->name is final. */
static int target_object(struct target *t, const char *verb)
{
    hd_buf_reset(&t->path);
    hd_buf_reset(&t->what);
    hd_buf_puts(&t->path, "/v1/objects/");
    hd_cli_path_encode(&t->path, t->bucket, 0);
    hd_buf_puts(&t->path, "/");
    hd_cli_path_encode(&t->path, t->name, 1);
    hd_buf_printf(&t->what, "object %s %s/%s", verb, t->bucket, t->name);
    if (t->path.oom || t->what.oom)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    return 0;
}

int hd_cli_etag_check(const char *what, const char *etag, const char *md5)
{
    if (hd_etag_is_md5(etag) && md5[0] && strcasecmp(etag, md5) != 0)
        return hd_cli_fail(
            HD_CLI_EXIT_API,
            "%s: checksum mismatch: server ETag %s, MD5 of the bytes sent/received %s", what, etag,
            md5);
    return 0;
}

/* ---- put ------------------------------------------------------------------------------ */

int hd_cli_object_put(struct hd_cli *cli, int argc, char **argv)
{
    const char *file = argv[0];
    int is_stdin = strcmp(file, "-") == 0;
    struct hd_cli_req rq = {.method = "PUT", .hash = 1, .upload_size = -1};
    struct hd_cli_resp rs;
    struct target t;
    struct stat st;
    char etag[128], size[32];
    FILE *f = NULL;
    int rc;

    if (!is_stdin && stat(file, &st) == 0 && S_ISDIR(st.st_mode))
        return hd_cli_put_dir(cli, file, argv[1]); /* every file under it */
    hd_cli_resp_init(&rs);
    rc = target_init(cli, &t, argv[1], 0);
    if (rc != 0)
        goto out;
    /* "B/" or "B/dir/": the object takes the file's name, like cp into a directory. */
    if (t.name[0] == '\0' || t.name[strlen(t.name) - 1] == '/') {
        const char *base = hd_cli_basename(file);
        struct hd_buf n;
        if (is_stdin || base[0] == '\0') {
            rc = hd_cli_usage_error(cli, "'%s' needs an object name when uploading %s", argv[1],
                                    is_stdin ? "stdin" : file);
            goto out;
        }
        hd_buf_init(&n);
        hd_buf_puts(&n, t.name);
        hd_buf_puts(&n, base);
        if (n.oom) {
            hd_buf_cleanup(&n);
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        free(t.name);
        t.name = hd_buf_steal(&n, NULL);
    }
    rc = target_object(&t, "put");
    if (rc != 0)
        goto out;

    if (is_stdin) {
        f = stdin;
    } else {
        f = fopen(file, "rb");
        if (!f) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot open %s: %s", t.what.data, file,
                             strerror(errno));
            goto out;
        }
        if (fstat(fileno(f), &st) != 0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: %s: %s", t.what.data, file, strerror(errno));
            goto out;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: %s: %s", t.what.data, file,
                             S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
            goto out;
        }
        rq.upload_size = (int64_t)st.st_size;
    }
    rq.path = t.path.data;
    rq.upload = f;
    rq.content_type = cli->opt[HD_CLI_OPT_CONTENT_TYPE];
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, t.what.data, rc, &rs);
        goto out;
    }
    hd_cli_etag_clean(hd_cli_resp_header(&rs, "ETag"), etag, sizeof(etag));
    rc = hd_cli_etag_check(t.what.data, etag, rs.md5);
    if (rc != 0)
        goto out;
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:s, s:I, s:s}", "bucket", t.bucket, "name", t.name, "size",
                              (json_int_t)rs.bytes, "etag", etag);
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        hd_cli_fmt_size(rs.bytes, size, sizeof(size));
        printf("uploaded %s -> %s/%s (%s, etag %s)\n", is_stdin ? "stdin" : file, t.bucket, t.name,
               size, etag[0] ? etag : "-");
        rc = HD_CLI_EXIT_OK;
    }
out:
    if (f && f != stdin)
        fclose(f);
    target_cleanup(&t);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

/* ---- get ------------------------------------------------------------------------------ */

/* Decides the destination file: FILE; DIR/basename(O) when the argument is a directory or
 * ends in '/'; ./basename(O) without an argument. */
static int get_dest(struct hd_cli *cli, const struct target *t, const char *arg,
                    struct hd_buf *dest)
{
    const char *base = hd_cli_basename(t->name);
    struct stat st;

    if (arg && arg[0] == '\0')
        return hd_cli_usage_error(cli, "empty FILE argument");
    if (arg && arg[strlen(arg) - 1] != '/' && !(stat(arg, &st) == 0 && S_ISDIR(st.st_mode))) {
        hd_buf_puts(dest, arg);
    } else {
        if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
            return hd_cli_usage_error(cli, "cannot name a local file after '%s/%s'; give FILE",
                                      t->bucket, t->name);
        if (arg) {
            hd_buf_puts(dest, arg);
            if (arg[strlen(arg) - 1] != '/')
                hd_buf_puts(dest, "/");
        }
        hd_buf_puts(dest, base);
    }
    return dest->oom ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory") : 0;
}

/* The sink for a download: stdout, a non-regular file written in place (/dev/null, a FIFO),
 * or FILE.tmp renamed over FILE once the object has arrived whole and verified. */
static int get_open(const char *what, const char *dest, struct hd_buf *tmp, FILE **f)
{
    struct stat st;
    int fd;

    if (stat(dest, &st) == 0 && !S_ISREG(st.st_mode)) {
        *f = fopen(dest, "wb");
        if (!*f)
            return hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot open %s: %s", what, dest,
                               strerror(errno));
        return 0;
    }
    hd_buf_printf(tmp, "%s.tmp", dest);
    if (tmp->oom)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    fd = open(tmp->data, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 || !(*f = fdopen(fd, "wb"))) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp->data);
        }
        hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot create %s: %s", what, tmp->data, strerror(err));
        hd_buf_reset(tmp); /* nothing of ours to remove */
        return HD_CLI_EXIT_API;
    }
    return 0;
}

int hd_cli_object_get(struct hd_cli *cli, int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : NULL;
    int to_stdout = arg && strcmp(arg, "-") == 0;
    struct hd_cli_req rq = {.method = "GET", .hash = 1};
    struct hd_cli_resp rs;
    struct hd_buf dest, tmp;
    struct target t;
    const char *sink;
    char etag[128], size[32];
    FILE *f = NULL;
    int rc;

    if (cli->opt[HD_CLI_OPT_RECURSIVE]) {
        if (to_stdout || cli->opt[HD_CLI_OPT_ARCHPATH])
            return hd_cli_usage_error(cli, "-r downloads into a directory: no '-' or --archpath");
        return hd_cli_get_recursive(cli, argv[0], arg ? arg : ".");
    }
    hd_cli_resp_init(&rs);
    hd_buf_init(&dest);
    hd_buf_init(&tmp);
    rc = target_init(cli, &t, argv[0], 1);
    if (rc == 0)
        rc = target_object(&t, "get");
    if (rc == 0 && cli->opt[HD_CLI_OPT_ARCHPATH]) { /* one member of a tar object */
        const char *m = cli->opt[HD_CLI_OPT_ARCHPATH];
        if (!*m) {
            rc = hd_cli_usage_error(cli, "--archpath needs a member name");
            goto out;
        }
        hd_cli_query_add(&t.path, "archpath", m);
        hd_buf_printf(&t.what, " (member %s)", m);
        free(t.name); /* names the local file: ./basename(member) by default */
        if (!(t.name = strdup(m)) || t.path.oom || t.what.oom)
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    }
    if (rc != 0)
        goto out;
    if (to_stdout) {
        f = stdout;
    } else {
        rc = get_dest(cli, &t, arg, &dest);
        if (rc == 0)
            rc = get_open(t.what.data, dest.data, &tmp, &f);
        if (rc != 0)
            goto out;
    }
    sink = to_stdout ? "stdout" : tmp.len ? tmp.data : dest.data;
    rq.path = t.path.data;
    rq.download = f;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        if (rc < 0 && rc == rs.local_err)
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: writing %s: %s", t.what.data, sink,
                             strerror(-rc));
        else
            rc = hd_cli_report(cli, t.what.data, rc, &rs);
        goto out;
    }
    if (fflush(f) != 0 || ferror(f)) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: writing %s: %s", t.what.data, sink, strerror(errno));
        goto out;
    }
    hd_cli_etag_clean(hd_cli_resp_header(&rs, "ETag"), etag, sizeof(etag));
    rc = hd_cli_etag_check(t.what.data, etag, rs.md5);
    if (rc != 0 || to_stdout)
        goto out;
    rc = fclose(f);
    f = NULL;
    if (rc != 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: writing %s: %s", t.what.data, sink, strerror(errno));
        goto out;
    }
    if (tmp.len && rename(tmp.data, dest.data) != 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: rename %s -> %s: %s", t.what.data, tmp.data,
                         dest.data, strerror(errno));
        goto out;
    }
    hd_buf_reset(&tmp); /* committed: nothing to remove */
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:s}", "bucket", t.bucket, "name", t.name,
                              "size", (json_int_t)rs.bytes, "etag", etag, "file", dest.data);
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        hd_cli_fmt_size(rs.bytes, size, sizeof(size));
        printf("downloaded %s/%s -> %s (%s)\n", t.bucket, t.name, dest.data, size);
        rc = HD_CLI_EXIT_OK;
    }
out:
    if (f && f != stdout)
        fclose(f);
    if (tmp.len > 0)
        unlink(tmp.data); /* set only while we own an uncommitted temp file */
    hd_buf_cleanup(&tmp);
    hd_buf_cleanup(&dest);
    target_cleanup(&t);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

/* ---- head ----------------------------------------------------------------------------- */

/* A HEAD error has no body; a GET of the same URL names the error (NoSuchKey vs NoSuchBucket).
 * Its body is discarded at once should the object exist after all. */
static int head_error(struct hd_cli *cli, const struct target *t, struct hd_cli_resp *rs)
{
    struct hd_cli_req rq = {.method = "GET", .path = t->path.data, .discard_success = 1};
    struct hd_cli_resp probe;
    int rc;

    if (rs->body.len > 0)
        return hd_cli_report(cli, t->what.data, 0, rs);
    hd_cli_resp_init(&probe);
    rc = hd_cli_http_do(cli, &rq, &probe);
    if (rc == 0 && probe.status >= 300 && probe.body.len > 0)
        rc = hd_cli_report(cli, t->what.data, 0, &probe);
    else
        rc = hd_cli_report(cli, t->what.data, 0, rs);
    hd_cli_resp_cleanup(&probe);
    return rc;
}

int hd_cli_object_head(struct hd_cli *cli, int argc, char **argv)
{
    static const char meta_prefix[] = "x-amz-meta-";
    struct hd_cli_req rq = {.method = "HEAD"};
    struct hd_cli_resp rs;
    struct target t;
    const char *len_s, *lm, *ct;
    char etag[128], size[32];
    uint64_t len = 0;
    json_t *j = NULL, *meta = NULL;
    size_t i;
    int rc;

    hd_cli_resp_init(&rs);
    rc = target_init(cli, &t, argv[0], 1);
    if (rc == 0)
        rc = target_object(&t, "head");
    if (rc != 0)
        goto out;
    rq.path = t.path.data;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0) {
        rc = hd_cli_report(cli, t.what.data, rc, &rs);
        goto out;
    }
    if (rs.status >= 300) {
        rc = head_error(cli, &t, &rs);
        goto out;
    }
    len_s = hd_cli_resp_header(&rs, "Content-Length");
    if (len_s)
        hd_cli_parse_count(len_s, 0, UINT64_MAX, &len);
    lm = hd_cli_resp_header(&rs, "Last-Modified");
    ct = hd_cli_resp_header(&rs, "Content-Type");
    hd_cli_etag_clean(hd_cli_resp_header(&rs, "ETag"), etag, sizeof(etag));

    if (cli->json) {
        j = json_pack("{s:s, s:s, s:I, s:s, s:s?, s:s?}", "bucket", t.bucket, "name", t.name,
                      "size", (json_int_t)len, "etag", etag, "last_modified", lm, "content_type",
                      ct);
        meta = json_object();
        if (!j || !meta || json_object_set(j, "metadata", meta) != 0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
    } else {
        hd_cli_fmt_size(len, size, sizeof(size));
        printf("%-15s %s/%s\n", "name", t.bucket, t.name);
        printf("%-15s %" PRIu64 " (%s)\n", "size", len, size);
        printf("%-15s %s\n", "etag", etag[0] ? etag : "-");
        printf("%-15s %s\n", "last-modified", lm ? lm : "-");
        printf("%-15s %s\n", "content-type", ct ? ct : "-");
    }
    for (i = 0; i < rs.nhdrs; i++) {
        const char *k = rs.hdrs[i].name;
        if (strncasecmp(k, meta_prefix, sizeof(meta_prefix) - 1) != 0)
            continue;
        k += sizeof(meta_prefix) - 1;
        if (meta)
            json_object_set_new(meta, k, json_string(rs.hdrs[i].value));
        else
            printf("meta.%-10s %s\n", k, rs.hdrs[i].value);
    }
    rc = j ? hd_cli_print_json(j) : HD_CLI_EXIT_OK;
out:
    json_decref(meta);
    json_decref(j);
    target_cleanup(&t);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

/* ---- ls ------------------------------------------------------------------------------- */

/* All pages of a listing (up to limit entries when limit > 0). user_opts: apply --delimiter,
 * --token and --cached from the command line; else cached_only asks for cached objects. */
static int ls_fetch_all(struct hd_cli *cli, const struct target *t, uint64_t limit, int user_opts,
                        int cached_only, json_t *entries, json_t *prefixes, char **next_token)
{
    const char *delim = user_opts ? cli->opt[HD_CLI_OPT_DELIMITER] : NULL;
    const char *tok0 = user_opts ? cli->opt[HD_CLI_OPT_TOKEN] : NULL;
    char *token = tok0 ? strdup(tok0) : NULL;
    struct hd_cli_req rq = {.method = "GET"};
    struct hd_cli_resp rs;
    struct hd_buf path;
    uint64_t have = 0;
    json_t *j = NULL;
    int rc = 0, noted = 0;

    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    *next_token = NULL;
    for (;;) {
        json_t *e, *p, *tok;
        json_error_t jerr;
        const char *ts;

        hd_buf_reset(&path);
        hd_buf_puts(&path, "/v1/buckets/");
        hd_cli_path_encode(&path, t->bucket, 0);
        if (t->name[0])
            hd_cli_query_add(&path, "prefix", t->name);
        if (delim)
            hd_cli_query_add(&path, "delimiter", delim);
        if ((user_opts && cli->opt[HD_CLI_OPT_CACHED]) || cached_only)
            hd_cli_query_add(&path, "cached", "true");
        if (limit) {
            char n[24];
            uint64_t want = limit - have;
            snprintf(n, sizeof(n), "%" PRIu64, want > LIST_PAGE_MAX ? LIST_PAGE_MAX : want);
            hd_cli_query_add(&path, "limit", n);
        }
        if (token && *token)
            hd_cli_query_add(&path, "token", token);
        if (path.oom) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        rq.path = path.data;
        rc = hd_cli_http_do(cli, &rq, &rs);
        if (rc != 0 || rs.status >= 300) {
            rc = hd_cli_report(cli, t->what.data, rc, &rs);
            goto out;
        }
        json_decref(j);
        j = json_loadb(rs.body.data ? rs.body.data : "", rs.body.len, 0, &jerr);
        e = json_object_get(j, "entries");
        p = json_object_get(j, "prefixes");
        tok = json_object_get(j, "continuation_token");
        if (!json_is_object(j) || (e && !json_is_array(e)) || (p && !json_is_array(p))) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: unexpected response from %s: %s", t->what.data,
                             cli->endpoint, j ? "bad \"entries\"/\"prefixes\"" : jerr.text);
            goto out;
        }
        if (json_is_true(json_object_get(j, "upstream_unavailable")) && !noted++)
            fprintf(stderr,
                    "hoard: note: %s: the upstream is unavailable; listing cached "
                    "objects only\n",
                    t->what.data);
        if ((e && json_array_extend(entries, e) != 0) ||
            (p && json_array_extend(prefixes, p) != 0)) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        have += (e ? json_array_size(e) : 0) + (p ? json_array_size(p) : 0);
        ts = json_string_value(tok);
        if (!ts || !*ts)
            break; /* listing complete */
        if (token && strcmp(token, ts) == 0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: server repeated continuation token '%s'",
                             t->what.data, ts);
            goto out;
        }
        free(token);
        token = strdup(ts);
        if (!token) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        if (limit && have >= limit) {
            *next_token = token; /* truncated by --limit: hand the token to the user */
            token = NULL;
            break;
        }
    }
out:
    free(token);
    json_decref(j);
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* NAME SIZE MODIFIED, and CACHED (yes/no) when the entries say (an S3-backed bucket). */
static int ls_print_table(json_t *entries, json_t *prefixes)
{
    static const char *const headers[] = {"NAME", "SIZE", "CACHED", "MODIFIED"};
    static const char *const headers3[] = {"NAME", "SIZE", "MODIFIED"};
    struct hd_cli_table tb;
    size_t ie = 0, ip = 0, ne = json_array_size(entries), np = json_array_size(prefixes), k;
    int rc, cached = 0;
    json_t *x;

    json_array_foreach(entries, k, x) cached |= json_object_get(x, "cached") != NULL;
    if (cached)
        hd_cli_table_init(&tb, 4, headers, 1u << 1);
    else
        hd_cli_table_init(&tb, 3, headers3, 1u << 1);
    /* Both arrays are in name order; merge so prefixes sit where they sort. */
    while (ie < ne || ip < np) {
        json_t *e = ie < ne ? json_array_get(entries, ie) : NULL;
        const char *pname = ip < np ? json_string_value(json_array_get(prefixes, ip)) : NULL;
        const char *row[4];
        char size[32];

        if (ip < np && !pname) {
            ip++;
            continue;
        }
        if (e && (!pname || strcmp(jstr(e, "name"), pname) < 0)) {
            json_t *sz = json_object_get(e, "size");
            row[0] = jstr(e, "name");
            if (json_is_integer(sz) && json_integer_value(sz) >= 0)
                hd_cli_fmt_size((uint64_t)json_integer_value(sz), size, sizeof(size));
            else
                snprintf(size, sizeof(size), "-");
            row[1] = size;
            row[2] = !json_object_get(e, "cached")                ? "-"
                     : json_is_true(json_object_get(e, "cached")) ? "yes"
                                                                  : "no";
            row[3] = jstr(e, "mtime");
            ie++;
        } else {
            row[0] = pname;
            row[1] = row[2] = row[3] = "-";
            ip++;
        }
        if (!cached)
            row[2] = row[3];
        hd_cli_table_add(&tb, row);
    }
    rc = hd_cli_table_print(&tb, stdout);
    hd_cli_table_cleanup(&tb);
    return rc < 0 ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory") : HD_CLI_EXIT_OK;
}

int hd_cli_object_ls(struct hd_cli *cli, int argc, char **argv)
{
    json_t *entries = json_array(), *prefixes = json_array();
    char *next = NULL;
    uint64_t limit = 0;
    struct target t;
    int rc;

    rc = target_init(cli, &t, argv[0], 0);
    if (rc != 0)
        goto out;
    hd_buf_printf(&t.what, "object ls %s", argv[0]);
    if (cli->opt[HD_CLI_OPT_LIMIT] &&
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_LIMIT], 1, UINT32_MAX, &limit) != 0) {
        rc = hd_cli_usage_error(cli, "--limit wants a positive integer, not '%s'",
                                cli->opt[HD_CLI_OPT_LIMIT]);
        goto out;
    }
    if (cli->opt[HD_CLI_OPT_DELIMITER] && !cli->opt[HD_CLI_OPT_DELIMITER][0]) {
        rc = hd_cli_usage_error(cli, "--delimiter must not be empty");
        goto out;
    }
    if (!entries || !prefixes || t.what.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    rc = ls_fetch_all(cli, &t, limit, 1, 0, entries, prefixes, &next);
    if (rc != 0)
        goto out;
    if (cli->json) {
        json_t *j = json_pack("{s:O, s:O}", "entries", entries, "prefixes", prefixes);
        if (j && next)
            json_object_set_new(j, "continuation_token", json_string(next));
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        rc = ls_print_table(entries, prefixes);
        if (rc == 0 && next) {
            fflush(stdout);
            fprintf(stderr, "hoard: more results; continue with --token %s\n", next);
        }
    }
out:
    free(next);
    json_decref(entries);
    json_decref(prefixes);
    target_cleanup(&t);
    return rc;
}

int hd_cli_list_all(struct hd_cli *cli, const char *bucket, const char *prefix, int cached_only,
                    const char *what, json_t *entries)
{
    json_t *prefixes = json_array();
    char *next = NULL;
    struct target t;
    int rc;

    memset(&t, 0, sizeof(t));
    hd_buf_init(&t.path);
    hd_buf_init(&t.what);
    t.bucket = (char *)bucket;
    t.name = (char *)(prefix ? prefix : "");
    hd_buf_puts(&t.what, what);
    if (!prefixes || t.what.oom)
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    else
        rc = ls_fetch_all(cli, &t, 0, 0, cached_only, entries, prefixes, &next);
    free(next);
    json_decref(prefixes);
    hd_buf_cleanup(&t.path);
    hd_buf_cleanup(&t.what);
    return rc;
}

/* ---- rm ------------------------------------------------------------------------------- */

int hd_cli_object_rm(struct hd_cli *cli, int argc, char **argv)
{
    struct hd_cli_req rq = {.method = "DELETE"};
    struct hd_cli_resp rs;
    struct target t;
    int rc;

    if (cli->opt[HD_CLI_OPT_PREFIX] || cli->opt[HD_CLI_OPT_TEMPLATE])
        return hd_cli_rm_many(cli, argv[0]);
    hd_cli_resp_init(&rs);
    rc = target_init(cli, &t, argv[0], 1);
    if (rc == 0)
        rc = target_object(&t, "rm");
    if (rc != 0)
        goto out;
    rq.path = t.path.data;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, t.what.data, rc, &rs);
        goto out;
    }
    if (cli->json) {
        json_t *j = json_pack("{s:s, s:s, s:b}", "bucket", t.bucket, "name", t.name, "removed", 1);
        rc = hd_cli_print_json(j);
        json_decref(j);
    } else {
        printf("removed %s/%s\n", t.bucket, t.name);
        rc = HD_CLI_EXIT_OK;
    }
out:
    target_cleanup(&t);
    hd_cli_resp_cleanup(&rs);
    return rc;
}
