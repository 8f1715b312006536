/* hoard-bench: a small aisloader-style load generator. GETs random URLs from a list with
 * N concurrent keep-alive connections for a fixed time, following redirects (a proxy's 307
 * to the owning target, keeping connections to both) when asked, and prints one JSON line:
 * requests, bytes, errors, requests/s, MiB/s, latency percentiles.
 *
 *   hoard-bench --urls FILE [--conns N] [--threads T] [--secs S] [--follow]
 *               [--sigv4 AK:SK] [--warmup S]
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
    int conns, threads, follow;
    double secs, warmup;
    const char *sigv4; /* "AK:SK" or NULL */
};

struct worker {
    const struct cfg *c;
    pthread_t thr;
    uint64_t reqs, bytes, errs, seed;
    double *lat;
    size_t nlat;
    int rc;
};

struct xfer {
    CURL *e;
    double t0;
    curl_off_t got;
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

static void start_one(struct worker *w, CURLM *m, struct xfer *x)
{
    const char *url = w->c->urls[rnd(&w->seed) % w->c->nurls];

    curl_multi_remove_handle(m, x->e);
    curl_easy_setopt(x->e, CURLOPT_URL, url);
    x->got = 0;
    x->t0 = now();
    curl_multi_add_handle(m, x->e);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    const struct cfg *c = w->c;
    int n = c->conns / c->threads, running = 1, i;
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
                    w->bytes += (uint64_t)x->got;
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

static void usage(void)
{
    fprintf(stderr, "usage: hoard-bench --urls FILE [--conns N] [--threads T] [--secs S] "
                    "[--warmup S] [--follow] [--sigv4 AK:SK]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct cfg c = {NULL, 0, 16, 2, 0, 5.0, 1.0, NULL};
    const char *urls = NULL;
    struct worker *w;
    uint64_t reqs = 0, bytes = 0, errs = 0;
    double *all = NULL, secs;
    size_t nall = 0, i;
    int t, rc;

    for (i = 1; i < (size_t)argc; i++) {
        const char *a = argv[i], *v = i + 1 < (size_t)argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--follow")) {
            c.follow = 1;
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
        else
            usage();
        i++;
    }
    if (!urls || c.conns < 1 || c.threads < 1 || c.secs <= 0 || c.warmup < 0)
        usage();
    if (c.threads > c.conns)
        c.threads = c.conns;
    c.conns -= c.conns % c.threads;
    if ((rc = load_urls(urls, &c)) < 0) {
        fprintf(stderr, "hoard-bench: %s: %s\n", urls, strerror(-rc));
        return 1;
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
    printf("{\"requests\": %llu, \"bytes\": %llu, \"errors\": %llu, \"secs\": %.3f, "
           "\"rps\": %.1f, \"mibs\": %.2f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}\n",
           (unsigned long long)reqs, (unsigned long long)bytes, (unsigned long long)errs, secs,
           (double)reqs / secs, (double)bytes / secs / 1048576.0, nall ? all[nall / 2] * 1e3 : 0.0,
           nall ? all[nall * 99 / 100] * 1e3 : 0.0);
    for (t = 0; t < c.threads; t++)
        free(w[t].lat);
    free(w);
    free(all);
    for (i = 0; i < c.nurls; i++)
        free(c.urls[i]);
    free(c.urls);
    curl_global_cleanup();
    return errs && !reqs ? 1 : 0;
}
