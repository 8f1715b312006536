/* hoard-bench: an aisloader-style load generator. GETs and PUTs (a mix) on URLs from a list
 * or generated from a base URL, random or sequential keys, PUT bodies of a fixed size or a
 * uniform size range, with N concurrent keep-alive connections for a fixed time, following
 * redirects (a proxy's 307 to the owning target, keeping connections to both) when asked,
 * signing with SigV4 when asked. Prints throughput and latency percentiles (p50, p90, p99),
 * as text or one JSON line (--json). Usage: docs/performance.md, "hoard-bench".
 *
 * Each thread runs a libcurl multi handle with conns/threads easy handles; an easy handle
 * reuses its connection(s) for the whole run. Single-threaded per handle: no locks on the
 * hot path; the threads' counters are summed at the end. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#define MAX_LAT (1u << 22) /* latency samples kept per thread */

struct cfg {
    char **urls;
    size_t nurls;
    int conns, threads, follow, seq, json;
    int put_pct;             /* share of requests that are PUTs, percent */
    size_t size_lo, size_hi; /* PUT body size, uniform in [lo, hi] */
    const char *body;        /* size_hi random bytes every PUT sends a prefix of */
    double secs, warmup;
    const char *sigv4; /* "AK:SK" or NULL */
};

struct worker {
    const struct cfg *c;
    pthread_t thr;
    uint64_t reqs, bytes, errs, seed, gets, puts;
    uint64_t next; /* sequential keys: this thread's next index */
    double *lat;
    size_t nlat;
    int rc;
};

struct xfer {
    CURL *e;
    double t0;
    curl_off_t got;
    int put;
    size_t len, off; /* PUT body: length and read position */
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

static void start_one(struct worker *w, CURLM *m, struct xfer *x)
{
    const struct cfg *c = w->c;
    size_t k = c->seq ? (size_t)(w->next++ % c->nurls) : (size_t)(rnd(&w->seed) % c->nurls);

    curl_multi_remove_handle(m, x->e);
    curl_easy_setopt(x->e, CURLOPT_URL, c->urls[k]);
    x->put = c->put_pct > 0 && (int)(rnd(&w->seed) % 100) < c->put_pct;
    if (x->put) {
        x->len = c->size_lo;
        if (c->size_hi > c->size_lo)
            x->len += (size_t)(rnd(&w->seed) % (c->size_hi - c->size_lo + 1));
        x->off = 0;
        curl_easy_setopt(x->e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(x->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->len);
    } else {
        curl_easy_setopt(x->e, CURLOPT_HTTPGET, 1L);
    }
    x->got = 0;
    x->t0 = now();
    curl_multi_add_handle(m, x->e);
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
    double t_start = now(), t_meas = t_start + c->warmup, t_end = t_meas + c->secs;

    if (!xs || !m) {
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
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, (long)c->follow);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
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
        start_one(w, m, &xs[i]);
    }
    while (running) {
        CURLMsg *msg;
        int left, still;
        double t;
        curl_multi_perform(m, &still);
        while ((msg = curl_multi_info_read(m, &left))) {
            struct xfer *x;
            long status = 0;
            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            t = now();
            if (t >= t_meas && x->t0 >= t_meas && t <= t_end) {
                if (msg->data.result != CURLE_OK || status != 200) {
                    w->errs++;
                } else {
                    w->reqs++;
                    if (x->put)
                        w->puts++;
                    else
                        w->gets++;
                    w->bytes += x->put ? (uint64_t)x->len : (uint64_t)x->got;
                    if (w->nlat < MAX_LAT)
                        w->lat[w->nlat++] = t - x->t0;
                }
            }
            if (t < t_end)
                start_one(w, m, x);
            else
                curl_multi_remove_handle(m, x->e);
        }
        if (now() >= t_end && still == 0)
            running = 0;
        else if (still)
            curl_multi_poll(m, NULL, 0, 100, NULL);
        if (now() > t_end + 30)
            running = 0; /* stragglers */
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

    if (!f)
        return -errno;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        if (c->nurls == alloc) {
            char **nv = realloc(c->urls, (alloc = alloc ? 2 * alloc : 256) * sizeof(*nv));
            if (!nv)
                break;
            c->urls = nv;
        }
        if (!(c->urls[c->nurls] = strdup(line)))
            break;
        c->nurls++;
    }
    free(line);
    fclose(f);
    return c->nurls ? 0 : -ENOENT;
}

/* The URLs base/obj-000000 .. base/obj-(n-1), for --base. */
static int gen_urls(const char *base, long n, struct cfg *c)
{
    long i;

    if (n < 1 || !(c->urls = calloc((size_t)n, sizeof(*c->urls))))
        return -EINVAL;
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

/* "10KiB", "1MiB", "4096", "1k": bytes; -1 when malformed. */
static long long parse_size(const char *s)
{
    char *e;
    long long v = strtoll(s, &e, 10);

    if (e == s || v < 0)
        return -1;
    if (!*e || !strcmp(e, "B"))
        return v;
    if (!strcmp(e, "k") || !strcmp(e, "K") || !strcmp(e, "KiB") || !strcmp(e, "KB"))
        return v * 1024;
    if (!strcmp(e, "m") || !strcmp(e, "M") || !strcmp(e, "MiB") || !strcmp(e, "MB"))
        return v * 1024 * 1024;
    if (!strcmp(e, "g") || !strcmp(e, "G") || !strcmp(e, "GiB") || !strcmp(e, "GB"))
        return v * 1024 * 1024 * 1024;
    return -1;
}

/* "SIZE" or "LO-HI" (uniform). */
static int parse_sizes(const char *s, struct cfg *c)
{
    char lo[64];
    const char *dash = strchr(s, '-');
    long long a, b;

    if (dash) {
        if ((size_t)(dash - s) >= sizeof(lo))
            return -1;
        memcpy(lo, s, (size_t)(dash - s));
        lo[dash - s] = '\0';
        a = parse_size(lo);
        b = parse_size(dash + 1);
    } else {
        a = b = parse_size(s);
    }
    if (a < 0 || b < a || b > (1ll << 32))
        return -1;
    c->size_lo = (size_t)a;
    c->size_hi = (size_t)b;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: hoard-bench (--urls FILE | --base URL --objects N) [--conns N] [--threads T]\n"
            "                   [--secs S] [--warmup S] [--put PCT] [--size SIZE|LO-HI] [--seq]\n"
            "                   [--follow] [--sigv4 AK:SK] [--json]\n");
    exit(2);
}

static double pct(const double *v, size_t n, int p)
{
    return n ? v[n * (size_t)p / 100] * 1e3 : 0.0;
}

int main(int argc, char **argv)
{
    struct cfg c;
    const char *urls = NULL, *base = NULL;
    long objects = 0;
    uint64_t gets = 0, puts = 0;
    struct worker *w;
    uint64_t reqs = 0, bytes = 0, errs = 0;
    double *all = NULL, secs;
    size_t nall = 0, i;
    int t, rc;

    memset(&c, 0, sizeof(c));
    c.conns = 16;
    c.threads = 2;
    c.secs = 5.0;
    c.warmup = 1.0;
    c.size_lo = c.size_hi = 10 * 1024;
    for (i = 1; i < (size_t)argc; i++) {
        const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--follow") || !strcmp(a, "--seq") || !strcmp(a, "--json")) {
            *(a[2] == 'f' ? &c.follow : a[2] == 's' ? &c.seq : &c.json) = 1;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(a, "--urls"))
            urls = v;
        else if (!strcmp(a, "--conns"))
            c.conns = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--threads"))
            c.threads = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--secs"))
            c.secs = strtod(v, NULL);
        else if (!strcmp(a, "--warmup"))
            c.warmup = strtod(v, NULL);
        else if (!strcmp(a, "--sigv4"))
            c.sigv4 = v;
        else if (!strcmp(a, "--base"))
            base = v;
        else if (!strcmp(a, "--objects"))
            objects = strtol(v, NULL, 10);
        else if (!strcmp(a, "--put"))
            c.put_pct = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--size") && parse_sizes(v, &c) < 0)
            usage();
        else if (strcmp(a, "--size") != 0)
            usage();
        i++;
    }
    if (!urls == !base || c.conns < 1 || c.threads < 1 || c.secs <= 0 || c.warmup < 0 ||
        c.put_pct < 0 || c.put_pct > 100)
        usage();
    if (c.threads > c.conns)
        c.threads = c.conns;
    c.conns -= c.conns % c.threads;
    if ((rc = urls ? load_urls(urls, &c) : gen_urls(base, objects, &c)) < 0) {
        fprintf(stderr, "hoard-bench: %s: %s\n", urls ? urls : "--objects", strerror(-rc));
        return 1;
    }
    if (c.put_pct) {
        char *b = malloc(c.size_hi ? c.size_hi : 1);
        uint64_t seed = 0x2545f4914f6cdd1dull ^ (uint64_t)time(NULL);
        if (!b)
            return 1;
        for (i = 0; i + 8 <= c.size_hi; i += 8) {
            uint64_t r = rnd(&seed);
            memcpy(b + i, &r, 8);
        }
        for (; i < c.size_hi; i++)
            b[i] = (char)rnd(&seed);
        hb_body = c.body = b;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    w = calloc((size_t)c.threads, sizeof(*w));
    if (!w)
        return 1;
    for (t = 0; t < c.threads; t++) {
        w[t].c = &c;
        w[t].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1) ^ (uint64_t)time(NULL);
        w[t].lat = malloc(MAX_LAT * sizeof(double));
        if (!w[t].lat || pthread_create(&w[t].thr, NULL, run, &w[t]) != 0)
            return 1;
    }
    for (t = 0; t < c.threads; t++) {
        pthread_join(w[t].thr, NULL);
        reqs += w[t].reqs;
        bytes += w[t].bytes;
        errs += w[t].errs;
        gets += w[t].gets;
        puts += w[t].puts;
        nall += w[t].nlat;
    }
    all = malloc((nall ? nall : 1) * sizeof(double));
    for (t = 0, nall = 0; all && t < c.threads; t++) {
        memcpy(all + nall, w[t].lat, w[t].nlat * sizeof(double));
        nall += w[t].nlat;
    }
    if (all && nall)
        qsort(all, nall, sizeof(double), dcmp);
    secs = c.secs;
    if (c.json)
        printf("{\"requests\": %llu, \"gets\": %llu, \"puts\": %llu, \"bytes\": %llu, "
               "\"errors\": %llu, \"secs\": %.3f, \"rps\": %.1f, \"mibs\": %.2f, "
               "\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f}\n",
               (unsigned long long)reqs, (unsigned long long)gets, (unsigned long long)puts,
               (unsigned long long)bytes, (unsigned long long)errs, secs, (double)reqs / secs,
               (double)bytes / secs / 1048576.0, pct(all, nall, 50), pct(all, nall, 90),
               pct(all, nall, 99));
    else
        printf("%llu requests (%llu GET, %llu PUT) in %.1f s, %llu errors\n"
               "throughput: %.1f req/s, %.2f MiB/s\n"
               "latency:    p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n",
               (unsigned long long)reqs, (unsigned long long)gets, (unsigned long long)puts, secs,
               (unsigned long long)errs, (double)reqs / secs, (double)bytes / secs / 1048576.0,
               pct(all, nall, 50), pct(all, nall, 90), pct(all, nall, 99));
    for (t = 0; t < c.threads; t++)
        free(w[t].lat);
    free(w);
    free(all);
    for (i = 0; i < c.nurls; i++)
        free(c.urls[i]);
    free(c.urls);
    free((char *)c.body);
    curl_global_cleanup();
    return errs && !reqs ? 1 : 0;
}
