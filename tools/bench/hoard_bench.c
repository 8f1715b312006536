/* hoard-bench: an aisloader-style load generator. GETs and PUTs (a mix) on URLs from a list
 * or generated from a base URL, random or sequential keys, PUT bodies of a fixed size, a
 * uniform size range or a weighted list of sizes, with N concurrent keep-alive connections for
 * a fixed time or a fixed number of requests, following redirects (a proxy's 307 to the owning
 * target, keeping connections to both) when asked, signing with SigV4 when asked. Prints
 * throughput and latency percentiles (p50, p90, p99; overall and per operation), as text or
 * one JSON object (--json). Usage: --help, and docs/performance.md, "hoard-bench".
 *
 * Each thread runs a libcurl multi handle with conns/threads easy handles; an easy handle
 * reuses its connection(s) for the whole run. Single-threaded per handle: no locks on the
 * hot path; the threads' counters are summed at the end. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#define MAX_LAT (1u << 22) /* latency samples kept per thread and operation */
#define MAX_SIZES 16       /* entries of a weighted --size list */
#define NSTATUS 600        /* statuses counted one by one (0: no HTTP answer) */

enum { OP_GET, OP_PUT, NOPS };
static const char *const op_name[NOPS] = {"get", "put"};

struct cfg {
    char **urls;
    size_t nurls;
    int conns, threads, follow, seq, json, insecure;
    int put_pct; /* share of requests that are PUTs, percent */
    /* PUT body sizes: uniform in [lo[0], hi[0]] (nsizes 1), or lo[i] with weight w[i] */
    size_t nsizes, size_lo[MAX_SIZES], size_hi[MAX_SIZES];
    unsigned weight[MAX_SIZES], wsum;
    size_t size_max;
    double secs, warmup;
    long long requests; /* >0: stop after this many measured requests instead of at secs */
    long timeout;       /* per request, seconds */
    const char *sigv4;  /* "AK:SK" or NULL */
    const char *cacert;
};

struct lat {
    double *v;
    size_t n, cap;
};

struct worker {
    const struct cfg *c;
    pthread_t thr;
    uint64_t ops[NOPS], bytes[NOPS], errs, redirects, seed;
    uint64_t next;      /* sequential keys: this thread's next index */
    int inflight;       /* transfers added to the multi handle and not done */
    long long quota;    /* --requests: how many this thread still starts (-1: no limit) */
    double t_meas;      /* when its warm-up ends */
    double t_last_done; /* --requests: when its last request ended */
    uint64_t status[NSTATUS];
    struct lat lat[NOPS];
    char first_err[512];
    int rc;
};

struct xfer {
    CURL *e;
    double t0;
    curl_off_t got;
    int op, measured;
    size_t len, off; /* PUT body: length and read position */
    char err[CURL_ERROR_SIZE];
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s) /* xorshift64* */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static size_t sink(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;

    (void)p;
    x->got += (curl_off_t)(size * n);
    return size * n;
}

/* Every PUT sends a prefix of these random bytes (one buffer for all threads, read only). */
static const char *hb_body;

static size_t source(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t k = size * n;

    if (k > x->len - x->off)
        k = x->len - x->off;
    memcpy(p, hb_body + x->off, k);
    x->off += k;
    return k;
}

/* A redirected PUT sends its body again. */
static int rewind_body(void *arg, curl_off_t off, int origin)
{
    struct xfer *x = arg;

    if (origin != SEEK_SET || off < 0 || (size_t)off > x->len)
        return CURL_SEEKFUNC_CANTSEEK;
    x->off = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

static size_t pick_size(const struct cfg *c, uint64_t *seed)
{
    unsigned r;
    size_t i;

    if (c->nsizes == 1) {
        size_t len = c->size_lo[0];
        if (c->size_hi[0] > len)
            len += (size_t)(rnd(seed) % (c->size_hi[0] - len + 1));
        return len;
    }
    r = (unsigned)(rnd(seed) % c->wsum);
    for (i = 0; i + 1 < c->nsizes && r >= c->weight[i]; i++)
        r -= c->weight[i];
    return c->size_lo[i];
}

static void start_one(struct worker *w, CURLM *m, struct xfer *x)
{
    const struct cfg *c = w->c;
    size_t k = c->seq ? (size_t)(w->next++ % c->nurls) : (size_t)(rnd(&w->seed) % c->nurls);

    curl_multi_remove_handle(m, x->e);
    curl_easy_setopt(x->e, CURLOPT_URL, c->urls[k]);
    x->op = c->put_pct > 0 && (int)(rnd(&w->seed) % 100) < c->put_pct ? OP_PUT : OP_GET;
    if (x->op == OP_PUT) {
        x->len = pick_size(c, &w->seed);
        x->off = 0;
        curl_easy_setopt(x->e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(x->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->len);
    } else {
        curl_easy_setopt(x->e, CURLOPT_HTTPGET, 1L);
    }
    x->got = 0;
    x->err[0] = '\0';
    x->t0 = now();
    if (w->quota > 0 && x->t0 >= w->t_meas)
        w->quota--; /* warm-up requests are not part of --requests */
    w->inflight++;
    curl_multi_add_handle(m, x->e);
}

static int lat_add(struct lat *l, double v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4096;
        double *nv;
        if (cap > MAX_LAT)
            return 0; /* enough samples for percentiles; the rest still count */
        if (!(nv = realloc(l->v, cap * sizeof(*nv))))
            return -ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

static void done_one(struct worker *w, struct xfer *x, CURLcode res, double t)
{
    long status = 0, redirs = 0;

    curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x->e, CURLINFO_REDIRECT_COUNT, &redirs);
    if (res != CURLE_OK)
        status = 0; /* a transfer error counts as "no HTTP answer" whatever came before */
    w->status[status >= 0 && status < NSTATUS ? status : 0]++;
    w->redirects += (uint64_t)redirs;
    if (res != CURLE_OK || status != 200) {
        w->errs++;
        if (!w->first_err[0]) {
            char *url = NULL;
            curl_easy_getinfo(x->e, CURLINFO_EFFECTIVE_URL, &url);
            snprintf(w->first_err, sizeof(w->first_err), "%s %s: %s", x->op ? "PUT" : "GET",
                     url ? url : "?",
                     res != CURLE_OK ? (x->err[0] ? x->err : curl_easy_strerror(res)) : "");
            if (res == CURLE_OK) {
                size_t l = strlen(w->first_err);
                snprintf(w->first_err + l, sizeof(w->first_err) - l, "HTTP %ld", status);
            }
        }
        return;
    }
    w->ops[x->op]++;
    w->bytes[x->op] += x->op == OP_PUT ? (uint64_t)x->len : (uint64_t)x->got;
    if (lat_add(&w->lat[x->op], t - x->t0) < 0)
        w->rc = -ENOMEM;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    const struct cfg *c = w->c;
    int n = c->conns / c->threads, running = 1, i;
    struct curl_slist *no_expect = curl_slist_append(NULL, "Expect:");

    /* SigV4 over a streamed PUT body: libcurl cannot hash it, so the payload is declared
     * unsigned (as S3 allows); the header is part of what libcurl signs */
    if (c->sigv4 && no_expect) {
        struct curl_slist *l =
            curl_slist_append(no_expect, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (l)
            no_expect = l;
    }
    struct xfer *xs = calloc((size_t)n, sizeof(*xs));
    CURLM *m = curl_multi_init();
    double t_meas = w->t_meas, t_end = t_meas + c->secs;

    if (!xs || !m || !no_expect) {
        w->rc = -ENOMEM;
        goto out;
    }
    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)(4 * n + 16));
    for (i = 0; i < n; i++) {
        CURL *e = xs[i].e = curl_easy_init();
        if (!e) {
            w->rc = -ENOMEM;
            goto out;
        }
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &xs[i]);
        curl_easy_setopt(e, CURLOPT_PRIVATE, &xs[i]);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, xs[i].err);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, (long)c->follow);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, c->timeout);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, source);
        curl_easy_setopt(e, CURLOPT_READDATA, &xs[i]);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, rewind_body);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, &xs[i]);
        /* a PUT's 307 is followed as a PUT with its body (curl keeps the method for 307) */
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, no_expect); /* no 100-continue round trip */
        if (c->sigv4) {
            curl_easy_setopt(e, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
            curl_easy_setopt(e, CURLOPT_USERPWD, c->sigv4);
        }
        if (c->insecure) {
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (c->cacert)
            curl_easy_setopt(e, CURLOPT_CAINFO, c->cacert);
        if (w->quota != 0)
            start_one(w, m, &xs[i]);
    }
    while (running) {
        CURLMsg *msg;
        int left, still;
        double t;
        curl_multi_perform(m, &still);
        while ((msg = curl_multi_info_read(m, &left))) {
            struct xfer *x;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            w->inflight--;
            t = now();
            /* counted when it started and ended inside the window (--requests: every one) */
            if (x->t0 >= t_meas && (c->requests || (t >= t_meas && t <= t_end))) {
                done_one(w, x, msg->data.result, t);
                w->t_last_done = t;
            }
            if (t < t_end && w->quota != 0)
                start_one(w, m, x);
            else
                curl_multi_remove_handle(m, x->e);
        }
        if (w->inflight == 0)
            running = 0; /* none started again: the window or the count is over */
        else if (still)
            curl_multi_poll(m, NULL, 0, 100, NULL);
        if (now() > t_end + (double)c->timeout)
            running = 0; /* stragglers (cannot happen: each request has its timeout) */
    }
out:
    for (i = 0; xs && i < n; i++) {
        if (xs[i].e) {
            curl_multi_remove_handle(m, xs[i].e);
            curl_easy_cleanup(xs[i].e);
        }
    }
    free(xs);
    if (m)
        curl_multi_cleanup(m);
    curl_slist_free_all(no_expect);
    return NULL;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int load_urls(const char *path, struct cfg *c)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    ssize_t len;
    int rc = 0;

    if (!f)
        return -errno;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        if (c->nurls == alloc) {
            char **nv = realloc(c->urls, (alloc = alloc ? 2 * alloc : 256) * sizeof(*nv));
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            c->urls = nv;
        }
        if (!(c->urls[c->nurls] = strdup(line))) {
            rc = -ENOMEM;
            break;
        }
        c->nurls++;
    }
    free(line);
    fclose(f);
    return rc < 0 ? rc : c->nurls ? 0 : -ENOENT;
}

/* The URLs base/obj-000000 .. base/obj-(n-1), for --base. */
static int gen_urls(const char *base, long n, struct cfg *c)
{
    long i;

    if (!(c->urls = calloc((size_t)n, sizeof(*c->urls))))
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        size_t len = strlen(base) + 32;
        if (!(c->urls[i] = malloc(len)))
            return -ENOMEM;
        snprintf(c->urls[i], len, "%s%sobj-%06ld", base,
                 base[0] && base[strlen(base) - 1] == '/' ? "" : "/", i);
        c->nurls++;
    }
    return 0;
}

/* "10KiB", "1MiB", "4096", "1k": bytes; -1 when malformed or above 4 GiB. */
static long long parse_size(const char *s)
{
    static const struct {
        const char *suffix;
        int shift;
    } units[] = {{"", 0},    {"B", 0},  {"k", 10},   {"K", 10},   {"KiB", 10},
                 {"KB", 10}, {"m", 20}, {"M", 20},   {"MiB", 20}, {"MB", 20},
                 {"g", 30},  {"G", 30}, {"GiB", 30}, {"GB", 30}};
    char *e;
    long long v;
    size_t i;

    errno = 0;
    v = strtoll(s, &e, 10);
    if (e == s || v < 0 || errno || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return -1;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (!strcmp(e, units[i].suffix))
            return v > (1ll << 32) >> units[i].shift ? -1 : v << units[i].shift;
    }
    return -1;
}

/* "SIZE", "LO-HI" (uniform) or "SIZE:WEIGHT,SIZE:WEIGHT,..." (a weighted choice). */
static int parse_sizes(const char *s, struct cfg *c)
{
    char buf[512], *save = NULL, *tok;
    size_t i;

    if ((size_t)snprintf(buf, sizeof(buf), "%s", s) >= sizeof(buf))
        return -1;
    c->nsizes = 0;
    c->wsum = 0;
    c->size_max = 0;
    if (!strchr(buf, ':') && !strchr(buf, ',')) {
        char *dash = strchr(buf, '-');
        long long a, b;
        if (dash)
            *dash = '\0';
        a = parse_size(buf);
        b = dash ? parse_size(dash + 1) : a;
        if (a < 0 || b < a)
            return -1;
        c->nsizes = 1;
        c->size_lo[0] = (size_t)a;
        c->size_hi[0] = c->size_max = (size_t)b;
        return 0;
    }
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':'), *e;
        long long sz;
        unsigned long wt;
        if (!colon || c->nsizes == MAX_SIZES)
            return -1;
        *colon = '\0';
        sz = parse_size(tok);
        errno = 0;
        wt = strtoul(colon + 1, &e, 10);
        if (sz < 0 || e == colon + 1 || *e || errno || colon[1] == '-' || wt < 1 || wt > 1000000)
            return -1;
        i = c->nsizes++;
        c->size_lo[i] = c->size_hi[i] = (size_t)sz;
        c->weight[i] = (unsigned)wt;
        c->wsum += (unsigned)wt;
        if ((size_t)sz > c->size_max)
            c->size_max = (size_t)sz;
    }
    return c->nsizes ? 0 : -1;
}

static void help(void)
{
    printf(
        "usage: hoard-bench (--urls FILE | --base URL --objects N) [options]\n"
        "\n"
        "Load generator for hoard (or any HTTP/S3 server): a mix of GETs and PUTs on N\n"
        "keep-alive connections for a fixed time (or a fixed number of requests); prints\n"
        "throughput and latency percentiles (p50, p90, p99), overall and per operation.\n"
        "\n"
        "keys:\n"
        "  --urls FILE         one URL per line ('#' comments and blank lines skipped)\n"
        "  --base URL          with --objects N: the keys URL/obj-000000 .. URL/obj-(N-1)\n"
        "                      (native: http://proxy/v1/objects/BUCKET, S3: http://proxy/BUCKET)\n"
        "  --seq               keys in order (each thread walks its part of the list) instead\n"
        "                      of random; with --requests N on N URLs: each URL once\n"
        "workload:\n"
        "  --put PCT           share of requests that are PUTs, 0-100 (default 0: GET only)\n"
        "  --size SPEC         PUT body size: SIZE (10KiB, 1MiB, 4096), LO-HI (uniform, e.g.\n"
        "                      4KiB-1MiB) or SIZE:WEIGHT,... (e.g. 10KiB:90,16MiB:10); default\n"
        "                      10KiB; bodies are random bytes; at most 4 GiB\n"
        "  --conns N           concurrent connections (default 16)\n"
        "  --threads T         client threads the connections are spread over (default 2)\n"
        "  --secs S            measured window in seconds (default 5)\n"
        "  --warmup S          seconds run first and not counted (default 1; 0 with --requests)\n"
        "  --requests N        stop after N requests (counted from the end of the warm-up)\n"
        "                      instead of after --secs (then --secs is only an upper bound)\n"
        "  --timeout S         per-request timeout in seconds (default 60)\n"
        "protocol:\n"
        "  --follow            follow redirects (the proxy's 307 to the owning target; a PUT\n"
        "                      is re-sent there with its body)\n"
        "  --sigv4 AK:SK       sign every request with AWS SigV4 (the S3 API with auth.keys)\n"
        "  --cacert FILE       CA bundle for https:// URLs; --insecure: do not verify\n"
        "output:\n"
        "  --json              one JSON object instead of text\n"
        "\n"
        "A request counts when it started and ended inside the window; anything but a final\n"
        "200 is an error, counted by status in \"status\" (0: no HTTP answer). Exit status 0\n"
        "when at least one request succeeded, 1 when none did, 2 on bad arguments.\n"
        "See docs/performance.md, \"hoard-bench\".\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
    va_list ap;

    fputs("hoard-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: hoard-bench (--urls FILE | --base URL --objects N) [options]; "
          "see hoard-bench --help\n",
          stderr);
    exit(2);
}

static long long num(const char *opt, const char *v, long long lo, long long hi)
{
    char *e;
    long long x;

    errno = 0;
    x = strtoll(v, &e, 10);
    if (e == v || *e || errno || x < lo || x > hi)
        bad("%s: '%s' is not a whole number in %lld..%lld", opt, v, lo, hi);
    return x;
}

static double fnum(const char *opt, const char *v, double lo, double hi)
{
    char *e;
    double x;

    errno = 0;
    x = strtod(v, &e);
    if (e == v || *e || errno || !isfinite(x) || x < lo || x > hi)
        bad("%s: '%s' is not a number in %g..%g", opt, v, lo, hi);
    return x;
}

static int valued(const char *a)
{
    static const char *const opts[] = {
        "--urls",     "--base",    "--objects", "--conns",  "--threads", "--secs", "--warmup",
        "--requests", "--timeout", "--sigv4",   "--cacert", "--put",     "--size"};
    size_t i;

    for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        if (!strcmp(a, opts[i]))
            return 1;
    return 0;
}

static double pct(const double *v, size_t n, int p)
{
    return n ? v[n * (size_t)p / 100] * 1e3 : 0.0;
}

/* Latency summary of sorted samples, in ms. */
static json_t *lat_json(const double *v, size_t n, uint64_t count, uint64_t bytes, double secs)
{
    double sum = 0;
    size_t i;

    for (i = 0; i < n; i++)
        sum += v[i];
    return json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "requests", (json_int_t)count,
                     "bytes", (json_int_t)bytes, "rps", (double)count / secs, "mibs",
                     (double)bytes / secs / 1048576.0, "p50_ms", pct(v, n, 50), "p90_ms",
                     pct(v, n, 90), "p99_ms", pct(v, n, 99), "mean_ms",
                     n ? sum / (double)n * 1e3 : 0.0, "max_ms", n ? v[n - 1] * 1e3 : 0.0);
}

/* Sorted copy of every worker's samples of op (OP_GET, OP_PUT, or NOPS: both). */
static double *gather(const struct worker *w, int threads, int op, size_t *n)
{
    size_t k = 0;
    double *all;
    int t, o;

    for (t = 0; t < threads; t++)
        for (o = 0; o < NOPS; o++)
            if (op == NOPS || op == o)
                k += w[t].lat[o].n;
    if (!(all = malloc((k ? k : 1) * sizeof(*all))))
        return NULL;
    for (t = 0, k = 0; t < threads; t++)
        for (o = 0; o < NOPS; o++)
            if ((op == NOPS || op == o) && w[t].lat[o].n) { /* none: v may be NULL */
                memcpy(all + k, w[t].lat[o].v, w[t].lat[o].n * sizeof(*all));
                k += w[t].lat[o].n;
            }
    qsort(all, k, sizeof(*all), dcmp);
    *n = k;
    return all;
}

int main(int argc, char **argv)
{
    struct cfg c;
    const char *urls = NULL, *base = NULL;
    long long objects = 0;
    uint64_t ops[NOPS] = {0}, bytes[NOPS] = {0}, errs = 0, redirects = 0, reqs;
    uint64_t status[NSTATUS] = {0};
    struct worker *w;
    double *lat[NOPS + 1] = {NULL}, secs, t0, t_last = 0;
    size_t nlat[NOPS + 1] = {0}, i;
    const char *first_err = NULL;
    int t, rc, o, secs_given = 0, warmup_given = 0;

    memset(&c, 0, sizeof(c));
    c.conns = 16;
    c.threads = 2;
    c.secs = 5.0;
    c.warmup = 1.0;
    c.timeout = 60;
    c.nsizes = 1;
    c.size_lo[0] = c.size_hi[0] = c.size_max = 10 * 1024;
    for (i = 1; i < (size_t)argc; i++) {
        const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(a, "--follow") || !strcmp(a, "--seq") || !strcmp(a, "--json") ||
            !strcmp(a, "--insecure")) {
            *(a[2] == 'f'   ? &c.follow
              : a[2] == 's' ? &c.seq
              : a[2] == 'j' ? &c.json
                            : &c.insecure) = 1;
            continue;
        }
        if (!valued(a))
            bad("unknown argument '%s'", a);
        if (!v)
            bad("%s needs a value", a);
        if (!strcmp(a, "--urls"))
            urls = v;
        else if (!strcmp(a, "--conns"))
            c.conns = (int)num(a, v, 1, 100000);
        else if (!strcmp(a, "--threads"))
            c.threads = (int)num(a, v, 1, 1024);
        else if (!strcmp(a, "--secs"))
            c.secs = fnum(a, v, 0.001, 1e7), secs_given = 1;
        else if (!strcmp(a, "--warmup"))
            c.warmup = fnum(a, v, 0, 1e7), warmup_given = 1;
        else if (!strcmp(a, "--requests"))
            c.requests = num(a, v, 1, LLONG_MAX / 2);
        else if (!strcmp(a, "--timeout"))
            c.timeout = (long)num(a, v, 1, 86400);
        else if (!strcmp(a, "--sigv4")) {
            if (!strchr(v, ':') || v[0] == ':')
                bad("--sigv4: expected ACCESS_KEY:SECRET_KEY");
            c.sigv4 = v;
        } else if (!strcmp(a, "--cacert"))
            c.cacert = v;
        else if (!strcmp(a, "--base"))
            base = v;
        else if (!strcmp(a, "--objects"))
            objects = num(a, v, 1, 100000000);
        else if (!strcmp(a, "--put"))
            c.put_pct = (int)num(a, v, 0, 100);
        else if (!strcmp(a, "--size")) {
            if (parse_sizes(v, &c) < 0)
                bad("--size: '%s' is not SIZE, LO-HI or SIZE:WEIGHT,... (sizes like 4096, "
                    "10KiB, 1MiB; at most 4 GiB and %d entries)",
                    v, MAX_SIZES);
        } else
            bad("unknown argument '%s'", a);
        i++;
    }
    if (urls && base)
        bad("--urls and --base exclude each other");
    if (!urls && !base)
        bad("no keys: give --urls FILE or --base URL --objects N");
    if (base && !objects)
        bad("--base needs --objects N");
    if (urls && objects)
        bad("--objects goes with --base, not --urls");
    if (c.requests) {
        if (!secs_given)
            c.secs = 1e7; /* the count ends the run */
        if (!warmup_given)
            c.warmup = 0;
    }
    if (c.threads > c.conns)
        c.threads = c.conns;
    c.conns -= c.conns % c.threads;
    if ((rc = urls ? load_urls(urls, &c) : gen_urls(base, (long)objects, &c)) < 0) {
        fprintf(stderr, "hoard-bench: %s: %s\n", urls ? urls : "--objects",
                rc == -ENOENT && urls ? "no URLs in the file" : strerror(-rc));
        return 2;
    }
    if (c.put_pct) {
        char *b = malloc(c.size_max ? c.size_max : 1);
        uint64_t seed = 0x2545f4914f6cdd1dull ^ (uint64_t)time(NULL);
        if (!b) {
            fprintf(stderr, "hoard-bench: no memory for a %zu-byte body\n", c.size_max);
            return 1;
        }
        for (i = 0; i + 8 <= c.size_max; i += 8) {
            uint64_t r = rnd(&seed);
            memcpy(b + i, &r, 8);
        }
        for (; i < c.size_max; i++)
            b[i] = (char)rnd(&seed);
        hb_body = b;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    w = calloc((size_t)c.threads, sizeof(*w));
    if (!w)
        return 1;
    t0 = now() + c.warmup;
    for (t = 0; t < c.threads; t++) {
        w[t].c = &c;
        w[t].t_meas = t0;
        w[t].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1) ^ (uint64_t)time(NULL);
        w[t].quota = c.requests ? c.requests / c.threads + (t < c.requests % c.threads) : -1;
        /* --seq: threads start at different offsets so they do not read the same keys; with
         * --requests each starts where the one before ends, so --seq --requests N on N URLs
         * asks for every URL exactly once */
        w[t].next = c.requests ? (t ? w[t - 1].next + (uint64_t)w[t - 1].quota : 0)
                               : c.nurls * (uint64_t)t / (uint64_t)c.threads;
    }
    /* started only once every offset is set: a running thread counts its quota down */
    for (t = 0; t < c.threads; t++) {
        if (pthread_create(&w[t].thr, NULL, run, &w[t]) != 0) {
            fprintf(stderr, "hoard-bench: cannot start a thread\n");
            return 1;
        }
    }
    for (t = 0; t < c.threads; t++) {
        pthread_join(w[t].thr, NULL);
        if (w[t].rc < 0) {
            fprintf(stderr, "hoard-bench: %s\n", strerror(-w[t].rc));
            return 1;
        }
        for (o = 0; o < NOPS; o++) {
            ops[o] += w[t].ops[o];
            bytes[o] += w[t].bytes[o];
        }
        errs += w[t].errs;
        redirects += w[t].redirects;
        for (i = 0; i < NSTATUS; i++)
            status[i] += w[t].status[i];
        if (!first_err && w[t].first_err[0])
            first_err = w[t].first_err;
        if (w[t].t_last_done > t_last)
            t_last = w[t].t_last_done;
    }
    for (o = 0; o <= NOPS; o++) {
        if (!(lat[o] = gather(w, c.threads, o, &nlat[o]))) {
            fprintf(stderr, "hoard-bench: no memory for the latency samples\n");
            return 1;
        }
    }
    reqs = ops[OP_GET] + ops[OP_PUT];
    secs = c.requests ? (t_last > t0 ? t_last - t0 : 1e-6) : c.secs;
    if (c.json) {
        json_t *st = json_object(), *r;
        char k[8];
        for (i = 0; i < NSTATUS; i++) {
            if (status[i]) {
                snprintf(k, sizeof(k), "%zu", i);
                json_object_set_new(st, k, json_integer((json_int_t)status[i]));
            }
        }
        r = lat_json(lat[NOPS], nlat[NOPS], reqs, bytes[OP_GET] + bytes[OP_PUT], secs);
        json_object_set_new(r, "gets", json_integer((json_int_t)ops[OP_GET]));
        json_object_set_new(r, "puts", json_integer((json_int_t)ops[OP_PUT]));
        json_object_set_new(r, "errors", json_integer((json_int_t)errs));
        json_object_set_new(r, "redirects", json_integer((json_int_t)redirects));
        json_object_set_new(r, "secs", json_real(secs));
        json_object_set_new(r, "conns", json_integer(c.conns));
        json_object_set_new(r, "threads", json_integer(c.threads));
        json_object_set_new(r, "status", st);
        for (o = 0; o < NOPS; o++)
            json_object_set_new(r, op_name[o], lat_json(lat[o], nlat[o], ops[o], bytes[o], secs));
        if (first_err)
            json_object_set_new(r, "first_error", json_string(first_err));
        json_dumpf(r, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(7));
        putchar('\n');
        json_decref(r);
    } else {
        printf("%llu requests (%llu GET, %llu PUT) in %.1f s on %d connections, %llu errors",
               (unsigned long long)reqs, (unsigned long long)ops[OP_GET],
               (unsigned long long)ops[OP_PUT], secs, c.conns, (unsigned long long)errs);
        if (redirects)
            printf(", %llu redirects followed", (unsigned long long)redirects);
        printf("\nthroughput: %.1f req/s, %.2f MiB/s\n"
               "latency:    p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n",
               (double)reqs / secs, (double)(bytes[OP_GET] + bytes[OP_PUT]) / secs / 1048576.0,
               pct(lat[NOPS], nlat[NOPS], 50), pct(lat[NOPS], nlat[NOPS], 90),
               pct(lat[NOPS], nlat[NOPS], 99));
        for (o = 0; o < NOPS; o++) {
            if (ops[o] && ops[OP_GET] && ops[OP_PUT])
                printf("  %s: %.1f req/s, %.2f MiB/s, p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n",
                       o == OP_GET ? "GET" : "PUT", (double)ops[o] / secs,
                       (double)bytes[o] / secs / 1048576.0, pct(lat[o], nlat[o], 50),
                       pct(lat[o], nlat[o], 90), pct(lat[o], nlat[o], 99));
        }
        if (errs) {
            printf("errors by status:");
            for (i = 0; i < NSTATUS; i++)
                if (status[i] && i != 200)
                    printf(" %zu: %llu", i, (unsigned long long)status[i]);
            printf(" (0: no HTTP answer)\n");
        }
    }
    if (first_err)
        fprintf(stderr, "hoard-bench: first error: %s\n", first_err);
    for (t = 0; t < c.threads; t++)
        for (o = 0; o < NOPS; o++)
            free(w[t].lat[o].v);
    free(w);
    for (o = 0; o <= NOPS; o++)
        free(lat[o]);
    for (i = 0; i < c.nurls; i++)
        free(c.urls[i]);
    free(c.urls);
    free((char *)hb_body);
    curl_global_cleanup();
    return reqs ? 0 : 1;
}
