/* cmd_xfer: many-object verbs of the hoard CLI: recursive `object put DIR` and `object get -r`,
 * `object rm` by prefix or template, and `sync` between a directory and a bucket. Each builds a
 * plan (a list of PUT/GET/DELETE operations) on the main thread, then runs it on -j worker
 * threads, each with its own copy of the CLI context and so its own libcurl handle; the main
 * thread draws one progress line for the whole plan. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/brace.h"
#include "common/errors.h"
#include "common/json.h"
#include "tools/hoard/cli.h"
#include "tools/hoard/cli_fmt.h"
#include "tools/hoard/cli_http.h"
#include "tools/hoard/cli_obj.h"

#define XFER_JOBS_DEFAULT 4
#define XFER_JOBS_MAX 64
#define XFER_DRAW_MS 100

enum xop_kind { XOP_PUT, XOP_GET, XOP_DEL, XOP_RMLOCAL };

struct xop {
    enum xop_kind kind;
    char *local;     /* file (PUT/GET/RMLOCAL) */
    char *name;      /* object name (PUT/GET/DEL) */
    uint64_t size;   /* expected bytes, for the progress total */
    int64_t mtime_s; /* GET: the object's mtime, set on the file (0: leave it) */
    int rc;          /* exit code of this operation */
    int missing;     /* DEL: the object was not there */
};

struct xplan {
    struct hd_cli *cli;
    const char *bucket;
    struct xop *ops;
    size_t n, cap;
    atomic_size_t next;
    atomic_uint_fast64_t done_ops;
    _Atomic uint64_t done_bytes; /* body bytes moved so far, by every transfer (cli_http) */
};

static void plan_cleanup(struct xplan *p)
{
    size_t i;

    for (i = 0; i < p->n; i++) {
        free(p->ops[i].local);
        free(p->ops[i].name);
    }
    free(p->ops);
    memset(p, 0, sizeof(*p));
}

/* Takes ownership of local and name (freed on failure too). 0 or -ENOMEM. */
static int plan_add(struct xplan *p, enum xop_kind kind, char *local, char *name, uint64_t size,
                    int64_t mtime_s)
{
    struct xop *o;

    if ((kind != XOP_DEL && !local) || (kind != XOP_RMLOCAL && !name))
        goto oom;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        o = realloc(p->ops, cap * sizeof(*o));
        if (!o)
            goto oom;
        p->ops = o;
        p->cap = cap;
    }
    o = &p->ops[p->n++];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->local = local;
    o->name = name;
    o->size = size;
    o->mtime_s = mtime_s;
    return 0;
oom:
    free(local);
    free(name);
    return -ENOMEM;
}

static char *join(const char *a, const char *b)
{
    struct hd_buf s;

    hd_buf_init(&s);
    hd_buf_puts(&s, a);
    if (*a && a[strlen(a) - 1] != '/' && *b)
        hd_buf_puts(&s, "/");
    hd_buf_puts(&s, b);
    return s.oom ? (hd_buf_cleanup(&s), NULL) : hd_buf_steal(&s, NULL);
}

static void obj_path(struct hd_buf *path, const char *bucket, const char *name)
{
    hd_buf_reset(path);
    hd_buf_puts(path, "/v1/objects/");
    hd_cli_path_encode(path, bucket, 0);
    hd_buf_puts(path, "/");
    hd_cli_path_encode(path, name, 1);
}

/* ---- one operation (worker threads) ----------------------------------------------------- */

static int op_put(struct hd_cli *cli, const char *bucket, struct xop *o, const char *what,
                  _Atomic uint64_t *moved)
{
    struct hd_cli_req rq = {.method = "PUT", .hash = 1, .moved = moved};
    struct hd_cli_resp rs;
    struct hd_buf path;
    struct stat st;
    char etag[128];
    FILE *f;
    int rc;

    f = fopen(o->local, "rb");
    if (!f)
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot open %s: %s", what, o->local,
                           strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: %s: not a regular file", what, o->local);
    }
    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    obj_path(&path, bucket, o->name);
    rq.path = path.data;
    rq.upload = f;
    rq.upload_size = (int64_t)st.st_size;
    rq.content_type = cli->opt[HD_CLI_OPT_CONTENT_TYPE]; /* object put DIR --content-type */
    if (path.oom)
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    else if ((rc = hd_cli_http_do(cli, &rq, &rs)) != 0 || rs.status >= 300)
        rc = hd_cli_report(cli, what, rc, &rs);
    else {
        hd_cli_etag_clean(hd_cli_resp_header(&rs, "ETag"), etag, sizeof(etag));
        rc = hd_cli_etag_check(what, etag, rs.md5);
    }
    fclose(f);
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

/* mkdir -p of the directories above file. */
static int mkdirs_for(const char *file)
{
    char *d = strdup(file), *s;
    int rc = 0;

    if (!d)
        return -ENOMEM;
    for (s = strchr(d + 1, '/'); s && rc == 0; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(d, 0777) != 0 && errno != EEXIST)
            rc = -errno;
        *s = '/';
    }
    free(d);
    return rc;
}

static int op_get(struct hd_cli *cli, const char *bucket, struct xop *o, const char *what,
                  _Atomic uint64_t *moved)
{
    struct hd_cli_req rq = {.method = "GET", .hash = 1, .moved = moved};
    struct hd_cli_resp rs;
    struct hd_buf path, tmp;
    char etag[128];
    FILE *f = NULL;
    int rc, fd;

    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    hd_buf_init(&tmp);
    obj_path(&path, bucket, o->name);
    hd_buf_printf(&tmp, "%s.tmp", o->local);
    if (path.oom || tmp.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = mkdirs_for(o->local)) < 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot create the directories of %s: %s", what,
                         o->local, strerror(-rc));
        goto out;
    }
    fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: cannot create %s: %s", what, tmp.data,
                         strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp.data);
        }
        goto out;
    }
    rq.path = path.data;
    rq.download = f;
    rc = hd_cli_http_do(cli, &rq, &rs);
    if (rc != 0 || rs.status >= 300) {
        rc = rc < 0 && rc == rs.local_err
                 ? hd_cli_fail(HD_CLI_EXIT_API, "%s: writing %s: %s", what, tmp.data, strerror(-rc))
                 : hd_cli_report(cli, what, rc, &rs);
        goto out;
    }
    hd_cli_etag_clean(hd_cli_resp_header(&rs, "ETag"), etag, sizeof(etag));
    if ((rc = hd_cli_etag_check(what, etag, rs.md5)) != 0)
        goto out;
    rc = fclose(f);
    f = NULL;
    if (rc != 0 || rename(tmp.data, o->local) != 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: writing %s: %s", what, o->local, strerror(errno));
        goto out;
    }
    hd_buf_reset(&tmp);   /* committed */
    if (o->mtime_s > 0) { /* so that a later sync sees the file as up to date */
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)o->mtime_s}};
        utimensat(AT_FDCWD, o->local, ts, 0);
    }
out:
    if (f)
        fclose(f);
    if (tmp.len)
        unlink(tmp.data);
    hd_buf_cleanup(&tmp);
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

static int op_del(struct hd_cli *cli, const char *bucket, struct xop *o, const char *what)
{
    struct hd_cli_req rq = {.method = "DELETE"};
    struct hd_cli_resp rs;
    struct hd_buf path;
    char code[64], msg[256];
    int rc;

    hd_cli_resp_init(&rs);
    hd_buf_init(&path);
    obj_path(&path, bucket, o->name);
    rq.path = path.data;
    if (path.oom) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    } else if ((rc = hd_cli_http_do(cli, &rq, &rs)) == 0 && rs.status == 404) {
        hd_cli_resp_error(&rs, code, sizeof(code), msg, sizeof(msg));
        if (strcmp(code, "NoSuchKey") == 0) /* a template names what may not exist */
            o->missing = 1;
        else
            rc = hd_cli_report(cli, what, rc, &rs);
    } else if (rc != 0 || rs.status >= 300) {
        rc = hd_cli_report(cli, what, rc, &rs);
    }
    hd_buf_cleanup(&path);
    hd_cli_resp_cleanup(&rs);
    return rc;
}

static int op_run(struct hd_cli *cli, const char *bucket, struct xop *o, _Atomic uint64_t *moved)
{
    struct hd_buf what;
    int rc;

    hd_buf_init(&what);
    switch (o->kind) {
    case XOP_PUT:
        hd_buf_printf(&what, "put %s -> %s/%s", o->local, bucket, o->name);
        rc = what.oom ? -ENOMEM : op_put(cli, bucket, o, what.data, moved);
        break;
    case XOP_GET:
        hd_buf_printf(&what, "get %s/%s -> %s", bucket, o->name, o->local);
        rc = what.oom ? -ENOMEM : op_get(cli, bucket, o, what.data, moved);
        break;
    case XOP_DEL:
        hd_buf_printf(&what, "rm %s/%s", bucket, o->name);
        rc = what.oom ? -ENOMEM : op_del(cli, bucket, o, what.data);
        break;
    default:
        rc = unlink(o->local) == 0 || errno == ENOENT
                 ? 0
                 : hd_cli_fail(HD_CLI_EXIT_API, "rm %s: %s", o->local, strerror(errno));
        break;
    }
    hd_buf_cleanup(&what);
    return rc == -ENOMEM ? hd_cli_fail(HD_CLI_EXIT_API, "out of memory") : rc;
}

static void *worker(void *arg)
{
    struct xplan *p = arg;
    struct hd_cli cli = *p->cli; /* own connection; progress is drawn by the main thread */
    size_t i;

    cli.http = NULL;
    cli.progress = 0;
    cli.endpoint_owned = NULL;
    while (!hd_cli_interrupted && (i = atomic_fetch_add(&p->next, 1)) < p->n) {
        struct xop *o = &p->ops[i];
        o->rc = op_run(&cli, p->bucket, o, &p->done_bytes);
        atomic_fetch_add(&p->done_ops, 1);
    }
    hd_cli_http_free(cli.http);
    return NULL;
}

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void draw(const struct xplan *p, uint64_t total_bytes, double t0, int last)
{
    char line[160];

    hd_cli_fmt_job_progress(line, sizeof(line), atomic_load(&p->done_ops), p->n,
                            atomic_load(&p->done_bytes), total_bytes, mono_s() - t0);
    fprintf(stderr, "\r%s\033[K%s", line, last ? "\n" : "");
    fflush(stderr);
}

/* -j N (default 4), 1..64. */
static int parse_jobs(struct hd_cli *cli, unsigned *jobs)
{
    uint64_t v = XFER_JOBS_DEFAULT;

    if (cli->opt[HD_CLI_OPT_JOBS] &&
        hd_cli_parse_count(cli->opt[HD_CLI_OPT_JOBS], 1, XFER_JOBS_MAX, &v) != 0)
        return hd_cli_usage_error(cli, "-j/--jobs wants an integer in 1..%d, not '%s'",
                                  XFER_JOBS_MAX, cli->opt[HD_CLI_OPT_JOBS]);
    *jobs = (unsigned)v;
    return 0;
}

/* Runs every operation of the plan on `jobs` threads; the progress total counts from the
 * start (the plan is complete before the first line). Returns the number that failed. */
static size_t plan_run(struct xplan *p, unsigned jobs)
{
    pthread_t th[XFER_JOBS_MAX];
    uint64_t total_bytes = 0;
    unsigned i, started = 0;
    size_t k, failed = 0;
    double t0 = mono_s();
    int drawn = 0;

    for (k = 0; k < p->n; k++)
        total_bytes += p->ops[k].size;
    if (jobs > p->n)
        jobs = p->n ? (unsigned)p->n : 1;
    fflush(stdout);
    for (i = 0; i < jobs; i++)
        if (pthread_create(&th[started], NULL, worker, p) == 0)
            started++;
    if (started == 0)
        worker(p); /* no threads to be had: do it here */
    while (p->cli->progress && atomic_load(&p->done_ops) < p->n && !hd_cli_interrupted) {
        struct timespec ts = {0, XFER_DRAW_MS * 1000000L};
        draw(p, total_bytes, t0, 0);
        drawn = 1;
        nanosleep(&ts, NULL);
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (drawn)
        draw(p, total_bytes, t0, 1);
    for (k = 0; k < p->n; k++)
        if (p->ops[k].rc != 0)
            failed++;
    return failed;
}

/* The command's result: a summary line, or {"bucket","uploaded"|...,"bytes","failed",..}. */
static int plan_report(struct hd_cli *cli, struct xplan *p, const char *verb, size_t failed,
                       json_t *extra)
{
    uint64_t bytes = 0, count[4] = {0}, missing = 0;
    static const char *const keys[] = {"uploaded", "downloaded", "removed", "removed_local"};
    char size[32];
    size_t k;
    int rc = HD_CLI_EXIT_OK, any;

    for (k = 0; k < p->n; k++) {
        const struct xop *o = &p->ops[k];
        if (o->rc != 0)
            continue;
        if (o->missing) {
            missing++;
            continue;
        }
        count[o->kind]++;
        bytes += o->size;
    }
    if (hd_cli_interrupted)
        rc = hd_cli_fail(HD_CLI_EXIT_INTR, "%s: interrupted", verb);
    else if (failed)
        rc = hd_cli_fail(HD_CLI_EXIT_API, "%s: %zu of %zu operations failed", verb, failed, p->n);
    if (cli->json) {
        json_t *j = extra ? json_incref(extra) : json_object();
        for (k = 0; j && k < 4; k++)
            json_object_set_new(j, keys[k], json_integer((json_int_t)count[k]));
        if (j) {
            json_object_set_new(j, "bucket", json_string(p->bucket));
            json_object_set_new(j, "bytes", json_integer((json_int_t)bytes));
            json_object_set_new(j, "missing", json_integer((json_int_t)missing));
            json_object_set_new(j, "failed", json_integer((json_int_t)failed));
        }
        if (hd_cli_print_json(j) != 0 && rc == 0)
            rc = HD_CLI_EXIT_API;
        json_decref(j);
        return rc;
    }
    hd_cli_fmt_size(bytes, size, sizeof(size));
    printf("%s:", verb);
    for (k = 0, any = 0; k < 4; k++)
        if (count[k])
            printf("%s %" PRIu64 " %s", any++ ? "," : "", count[k],
                   k == XOP_RMLOCAL ? "removed locally" : keys[k]);
    if (!any)
        printf(" nothing %s", missing ? "removed" : "to do");
    if (missing)
        printf(", %" PRIu64 " not found", missing);
    printf(" (%s)", size);
    if (json_object_get(extra, "unchanged"))
        printf(", %" JSON_INTEGER_FORMAT " unchanged",
               json_integer_value(json_object_get(extra, "unchanged")));
    if (failed)
        printf(", %zu failed", failed);
    putchar('\n');
    return rc;
}

/* ---- local directory walk ---------------------------------------------------------------- */

struct lfile {
    char *rel; /* path under the root, '/'-separated */
    uint64_t size;
    int64_t mtime_s;
};

struct walk {
    size_t rootlen;
    struct lfile *f;
    size_t n, cap;
    int err;
};

static struct walk *walk_ctx; /* nftw has no user pointer; main thread only */

static int walk_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    struct walk *w = walk_ctx;
    struct lfile *f;
    size_t len = strlen(path);

    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0; /* directories, symlinks (not followed), devices: skipped */
    if (len >= 4 && strcmp(path + len - 4, ".tmp") == 0)
        return 0; /* our own partial downloads */
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        f = realloc(w->f, cap * sizeof(*f));
        if (!f)
            goto oom;
        w->f = f;
        w->cap = cap;
    }
    f = &w->f[w->n];
    f->rel = strdup(path + w->rootlen + (path[w->rootlen] == '/'));
    if (!f->rel)
        goto oom;
    f->size = (uint64_t)st->st_size;
    f->mtime_s = (int64_t)st->st_mtime;
    w->n++;
    return 0;
oom:
    w->err = -ENOMEM;
    return 1;
}

static int lfile_cmp(const void *a, const void *b)
{
    return strcmp(((const struct lfile *)a)->rel, ((const struct lfile *)b)->rel);
}

static void walk_cleanup(struct walk *w)
{
    size_t i;

    for (i = 0; i < w->n; i++)
        free(w->f[i].rel);
    free(w->f);
    memset(w, 0, sizeof(*w));
}

/* Every regular file under dir, sorted by relative path. 0 or an exit code (printed). */
static int walk_dir(const char *what, const char *dir, struct walk *w)
{
    int rc;

    memset(w, 0, sizeof(*w));
    w->rootlen = strlen(dir);
    while (w->rootlen > 1 && dir[w->rootlen - 1] == '/')
        w->rootlen--;
    walk_ctx = w;
    rc = nftw(dir, walk_cb, 32, FTW_PHYS);
    walk_ctx = NULL;
    if (w->err)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (rc != 0)
        return hd_cli_fail(HD_CLI_EXIT_API, "%s: reading %s: %s", what, dir, strerror(errno));
    if (w->n) /* an empty directory: no array at all */
        qsort(w->f, w->n, sizeof(*w->f), lfile_cmp);
    return 0;
}

/* An object name that is safe as a relative local path: no empty, "." or ".." segment. */
static int safe_rel(const char *rel)
{
    const char *s = rel;

    if (!*rel)
        return 0;
    for (;;) {
        size_t n = strcspn(s, "/");
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        if (!s[n])
            return 1;
        s += n + 1;
    }
}

/* The part of an object name below the listing prefix ("imgs/a/b.jpg" under "imgs" or
 * "imgs/" -> "a/b.jpg"). */
static const char *below(const char *name, const char *prefix)
{
    name += strlen(prefix);
    while (*name == '/')
        name++;
    return name;
}

static int64_t iso_to_s(const char *iso)
{
    struct tm tm;
    const char *e;

    memset(&tm, 0, sizeof(tm));
    if (!iso || !(e = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm)))
        return 0;
    return (int64_t)timegm(&tm);
}

static int bucket_prefix(struct hd_cli *cli, const char *arg, char **bucket, char **prefix)
{
    int rc = hd_cli_path_split(arg, bucket, prefix);

    if (rc == -ENOMEM)
        return hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
    if (rc < 0)
        return hd_cli_usage_error(cli, "bad path '%s': want BUCKET[/PREFIX]", arg);
    return 0;
}

/* ---- verbs ---------------------------------------------------------------------------- */

int hd_cli_put_dir(struct hd_cli *cli, const char *dir, const char *dst)
{
    struct xplan p;
    struct walk w;
    char *bucket = NULL, *prefix = NULL;
    unsigned jobs;
    size_t i, failed;
    int rc;

    memset(&p, 0, sizeof(p));
    memset(&w, 0, sizeof(w));
    if ((rc = parse_jobs(cli, &jobs)) != 0 || (rc = bucket_prefix(cli, dst, &bucket, &prefix)))
        goto out;
    if ((rc = walk_dir("object put", dir, &w)) != 0)
        goto out;
    p.cli = cli;
    p.bucket = bucket;
    for (i = 0; i < w.n; i++)
        if (plan_add(&p, XOP_PUT, join(dir, w.f[i].rel), join(prefix, w.f[i].rel), w.f[i].size, 0) <
            0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
    failed = plan_run(&p, jobs);
    rc = plan_report(cli, &p, "object put", failed, NULL);
out:
    plan_cleanup(&p);
    walk_cleanup(&w);
    free(bucket);
    free(prefix);
    return rc;
}

/* Objects under B/PREFIX into DIR/<name below PREFIX>. */
int hd_cli_get_recursive(struct hd_cli *cli, const char *src, const char *dir)
{
    json_t *ents = json_array(), *e;
    struct xplan p;
    char *bucket = NULL, *prefix = NULL;
    unsigned jobs;
    size_t i, failed, skipped = 0;
    int rc;

    memset(&p, 0, sizeof(p));
    if ((rc = parse_jobs(cli, &jobs)) != 0 || (rc = bucket_prefix(cli, src, &bucket, &prefix)))
        goto out;
    if (!ents) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if ((rc = hd_cli_list_all(cli, bucket, prefix, 0, "object get", ents)) != 0)
        goto out;
    p.cli = cli;
    p.bucket = bucket;
    json_array_foreach(ents, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *rel = name ? below(name, prefix) : "";
        if (!safe_rel(rel)) {
            hd_cli_fail(HD_CLI_EXIT_API, "object get: skipping '%s': not a safe local path",
                        name ? name : "?");
            skipped++;
            continue;
        }
        if (plan_add(&p, XOP_GET, join(dir, rel), strdup(name),
                     (uint64_t)json_integer_value(json_object_get(e, "size")),
                     iso_to_s(json_string_value(json_object_get(e, "mtime")))) < 0) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
    }
    failed = plan_run(&p, jobs) + skipped;
    rc = plan_report(cli, &p, "object get", failed, NULL);
out:
    plan_cleanup(&p);
    json_decref(ents);
    free(bucket);
    free(prefix);
    return rc;
}

/* object rm B --prefix P | --template T: many objects (missing ones are counted, not errors) */
int hd_cli_rm_many(struct hd_cli *cli, const char *arg)
{
    const char *pfx = cli->opt[HD_CLI_OPT_PREFIX], *tmpl = cli->opt[HD_CLI_OPT_TEMPLATE];
    json_t *ents = json_array(), *e;
    struct hd_brace *br = NULL;
    struct xplan p;
    char *bucket = NULL, *rest = NULL, err[160];
    unsigned jobs;
    size_t i, failed;
    int rc;

    memset(&p, 0, sizeof(p));
    if ((rc = parse_jobs(cli, &jobs)) != 0 || (rc = bucket_prefix(cli, arg, &bucket, &rest)))
        goto out;
    if (rest[0] || (pfx && tmpl)) {
        rc = hd_cli_usage_error(cli, "give B and one of --prefix P or --template T");
        goto out;
    }
    p.cli = cli;
    p.bucket = bucket;
    if (tmpl) {
        uint64_t k, n;
        struct hd_buf name;
        if (hd_brace_parse(tmpl, &br, err, sizeof(err)) != 0) {
            rc = hd_cli_usage_error(cli, "bad --template '%s': %s", tmpl, err);
            goto out;
        }
        n = hd_brace_count(br);
        hd_buf_init(&name);
        for (k = 0; k < n; k++) {
            hd_buf_reset(&name);
            if (hd_brace_at(br, k, &name) < 0 || name.oom ||
                plan_add(&p, XOP_DEL, NULL, strdup(name.data), 0, 0) < 0) {
                hd_buf_cleanup(&name);
                rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
                goto out;
            }
        }
        hd_buf_cleanup(&name);
    } else {
        if (!ents) {
            rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
            goto out;
        }
        if ((rc = hd_cli_list_all(cli, bucket, pfx, 0, "object rm", ents)) != 0)
            goto out;
        json_array_foreach(ents, i, e)
        {
            if (plan_add(&p, XOP_DEL, NULL, strdup(json_string_value(json_object_get(e, "name"))),
                         0, 0) < 0) {
                rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
                goto out;
            }
        }
    }
    failed = plan_run(&p, jobs);
    rc = plan_report(cli, &p, "object rm", failed, NULL);
out:
    hd_brace_free(br);
    plan_cleanup(&p);
    json_decref(ents);
    free(bucket);
    free(rest);
    return rc;
}

/* ---- sync ----------------------------------------------------------------------------- */

static int is_bucket_arg(const char *s)
{
    return strncmp(s, "hoard://", 8) == 0;
}

/* sync DIR hoard://B[/PREFIX] | sync hoard://B[/PREFIX] DIR: copies what is missing or differs
 * (size, or the source newer than the copy) to the other side; --delete removes from the
 * destination what the source lacks. */
int hd_cli_sync(struct hd_cli *cli, int argc, char **argv)
{
    int up = is_bucket_arg(argv[1]), rc;
    const char *dir = up ? argv[0] : argv[1], *barg = up ? argv[1] : argv[0];
    json_t *ents = json_array(), *e, *byname = json_object(), *extra = NULL;
    struct xplan p;
    struct walk w;
    char *bucket = NULL, *prefix = NULL;
    unsigned jobs;
    size_t i, failed, same = 0;
    struct stat st;

    (void)argc;
    memset(&p, 0, sizeof(p));
    memset(&w, 0, sizeof(w));
    if (up == is_bucket_arg(argv[0])) {
        rc = hd_cli_usage_error(cli, "sync wants one directory and one hoard://BUCKET[/PREFIX]");
        goto out;
    }
    if ((rc = parse_jobs(cli, &jobs)) != 0 || (rc = bucket_prefix(cli, barg + 8, &bucket, &prefix)))
        goto out;
    if (!ents || !byname) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
        goto out;
    }
    if (!up && stat(dir, &st) != 0 && mkdir(dir, 0777) != 0) {
        rc = hd_cli_fail(HD_CLI_EXIT_API, "sync: cannot create %s: %s", dir, strerror(errno));
        goto out;
    }
    if ((rc = walk_dir("sync", dir, &w)) != 0 ||
        (rc = hd_cli_list_all(cli, bucket, prefix, 0, "sync", ents)) != 0)
        goto out;
    json_array_foreach(ents, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name)
            json_object_set(byname, below(name, prefix), e);
    }
    p.cli = cli;
    p.bucket = bucket;
    for (i = 0; i < w.n; i++) { /* every local file */
        json_t *o = json_object_get(byname, w.f[i].rel);
        uint64_t osize = (uint64_t)json_integer_value(json_object_get(o, "size"));
        int64_t omtime = iso_to_s(json_string_value(json_object_get(o, "mtime")));
        int differs =
            !o || osize != w.f[i].size || (up ? w.f[i].mtime_s > omtime : omtime > w.f[i].mtime_s);
        if (o)
            json_object_set_new(o, "seen", json_true());
        if (!differs) {
            same++;
            continue;
        }
        if (up)
            rc = plan_add(&p, XOP_PUT, join(dir, w.f[i].rel), join(prefix, w.f[i].rel), w.f[i].size,
                          0);
        else if (o)
            rc = plan_add(&p, XOP_GET, join(dir, w.f[i].rel),
                          strdup(json_string_value(json_object_get(o, "name"))), osize, omtime);
        else if (cli->opt[HD_CLI_OPT_DELETE])
            rc = plan_add(&p, XOP_RMLOCAL, join(dir, w.f[i].rel), NULL, 0, 0);
        if (rc < 0)
            goto oom;
    }
    json_array_foreach(ents, i, e)
    { /* objects with no local file */
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || json_object_get(e, "seen"))
            continue;
        if (!up && safe_rel(below(name, prefix)))
            rc = plan_add(&p, XOP_GET, join(dir, below(name, prefix)), strdup(name),
                          (uint64_t)json_integer_value(json_object_get(e, "size")),
                          iso_to_s(json_string_value(json_object_get(e, "mtime"))));
        else if (up && cli->opt[HD_CLI_OPT_DELETE])
            rc = plan_add(&p, XOP_DEL, NULL, strdup(name), 0, 0);
        if (rc < 0)
            goto oom;
    }
    failed = plan_run(&p, jobs);
    extra = json_pack("{s:s, s:I}", "direction", up ? "up" : "down", "unchanged", (json_int_t)same);
    rc = plan_report(cli, &p, "sync", failed, extra);
    goto out;
oom:
    rc = hd_cli_fail(HD_CLI_EXIT_API, "out of memory");
out:
    json_decref(extra);
    json_decref(byname);
    json_decref(ents);
    plan_cleanup(&p);
    walk_cleanup(&w);
    free(bucket);
    free(prefix);
    return rc;
}
