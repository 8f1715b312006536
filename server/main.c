/* hoardd: loads config, opens logs, starts the role (--role target | proxy) behind the HTTP
 * server (or, with --prestop, runs a target's preStop hook: target/target.h), and waits for
 * SIGINT/SIGTERM to stop cleanly (SIGHUP reloads the TLS files). The stop is bounded: a watchdog
 * ends the process (_exit) when the orderly stop takes longer than shutdown.timeout seconds or a
 * second SIGINT/SIGTERM arrives, so a stuck request or thread can never keep a node alive. */
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/http.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "common/version.h"
#include "proxy/proxy.h"
#include "target/target.h"

extern char **environ;

/* SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken by one signal thread.
 * SIGHUP asks main to reload the TLS files; the first SIGINT/SIGTERM starts the orderly stop
 * (main waits on stop_sem, also while the node is still starting), and the stop is bounded by
 * shutdown.timeout or a second signal. */
static sigset_t all_sigs, stop_sigs;
static sem_t stop_sem;
static int stop_timeout_s;
static atomic_int reload;

static void *signal_thread(void *arg)
{
    struct timespec ts;
    siginfo_t si;
    int sig = 0;

    (void)arg;
    for (;;) {
        if (sigwait(&all_sigs, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            break;
        atomic_store(&reload, 1);
    }
    HD_LOG(HD_INFO, NULL, "stopping (signal %d; at most %d s)", sig, stop_timeout_s);
    sem_post(&stop_sem);
    ts.tv_sec = stop_timeout_s;
    ts.tv_nsec = 0;
    do
        sig = sigtimedwait(&stop_sigs, &si, &ts);
    while (sig < 0 && errno == EINTR);
    if (sig > 0)
        HD_LOG(HD_WARN, NULL, "second signal %d while stopping: exiting now", sig);
    else
        HD_LOG(HD_WARN, NULL, "stop took longer than shutdown.timeout (%d s): exiting now",
               stop_timeout_s);
    _exit(1);
    return NULL;
}

/* Blocks the signals (before any other thread exists, so every thread inherits the mask) and
 * starts the thread that takes them. */
static int stop_signals(int timeout_s)
{
    pthread_t th;

    stop_timeout_s = timeout_s;
    sigemptyset(&stop_sigs);
    sigaddset(&stop_sigs, SIGINT);
    sigaddset(&stop_sigs, SIGTERM);
    all_sigs = stop_sigs;
    sigaddset(&all_sigs, SIGHUP);
    if (sem_init(&stop_sem, 0, 0) != 0 || pthread_sigmask(SIG_BLOCK, &all_sigs, NULL) != 0 ||
        pthread_create(&th, NULL, signal_thread, NULL) != 0)
        return -1;
    pthread_detach(th);
    return 0;
}

/* SIGHUP: the certificate, key and CA are read again; new connections get them, open ones
 * keep what they were set up with. A bad file leaves the old credentials in use. */
static void tls_reload(struct hd_tls *tls)
{
    char err[512], desc[600];

    if (!tls) {
        HD_LOG(HD_INFO, NULL, "SIGHUP: TLS is off, nothing to reload");
        return;
    }
    if (hd_tls_reload(tls, err, sizeof(err)) < 0) {
        HD_LOG(HD_ERROR, NULL, "SIGHUP: TLS reload failed, the old certificate stays: %s", err);
        return;
    }
    hd_tls_describe(tls, desc, sizeof(desc));
    HD_LOG(HD_INFO, NULL, "SIGHUP: TLS certificate reloaded: %s", desc);
}

/* A crash leaves its evidence in the error log: the signal and a backtrace (addresses are
 * resolved with addr2line -e hoardd when the binary has no symbols), then the default action
 * (a core file where the limits allow one). Not under ASan, which reports better itself. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
static char altstack[64 * 1024];

static void on_fatal(int sig)
{
    static const char head[] = "hoardd: fatal signal ";
    char num[16];
    void *frames[64];
    int fd = hd_log_error_fd(), n = 0, i, v = sig;

    do
        num[sizeof(num) - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < (int)sizeof(num) - 1);
    if (write(fd, head, sizeof(head) - 1) < 0 || write(fd, num + sizeof(num) - n, (size_t)n) < 0 ||
        write(fd, ", backtrace:\n", 13) < 0)
        (void)0;
    i = backtrace(frames, 64);
    backtrace_symbols_fd(frames, i, fd);
    signal(sig, SIG_DFL);
    raise(sig);
}
#endif

static void crash_handlers(void)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    stack_t ss;
    void *warm[1];
    size_t i;

    backtrace(warm, 1); /* loads libgcc now: backtrace() may allocate on first use */
    ss.ss_sp = altstack;
    ss.ss_size = sizeof(altstack);
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL); /* a stack overflow still gets its backtrace */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
#endif
}

static void usage(void)
{
    fprintf(stderr,
            "usage: hoardd [--config FILE] [--KEY VALUE | --KEY=VALUE ...] [--print-config]\n"
            "       hoardd --prestop [--prestop-timeout SECONDS] [same settings as the target]\n"
            "  e.g. hoardd --role target --listen 127.0.0.1:8080 --data ./.hoard/data\n"
            "  every setting (see --print-config) may also come from HOARD_<KEY> env vars\n"
            "  --prestop: a target's preStop hook: maintenance until it rejoins, then waits\n"
            "  (default 600 s) until its objects are served by the other targets\n");
}

/* The TLS files of cfg, in use for this process's calls (and its server): 0, or -1 after
 * printing why. */
static int tls_setup(const struct hd_config *cfg, struct hd_tls **tls)
{
    char err[512];

    if (*hd_config_str(cfg, "tls.cert") || *hd_config_str(cfg, "tls.key")) {
        /* before the roles: they build this node's URL with hd_tls_scheme() */
        if (hd_tls_new(hd_config_str(cfg, "tls.cert"), hd_config_str(cfg, "tls.key"),
                       hd_config_str(cfg, "tls.ca"), hd_config_bool(cfg, "tls.client_auth"), tls,
                       err, sizeof(err)) < 0) {
            fprintf(stderr, "hoardd: %s\n", err);
            return -1;
        }
        hd_tls_verify_host(*tls, hd_config_bool(cfg, "tls.verify_host"));
        hd_tls_use(*tls);
    } else if (hd_config_bool(cfg, "tls.client_auth") || *hd_config_str(cfg, "tls.ca")) {
        /* a cluster is all TLS or none: a CA alone would do nothing */
        fprintf(stderr, "hoardd: %s needs tls.cert and tls.key\n",
                hd_config_bool(cfg, "tls.client_auth") ? "tls.client_auth" : "tls.ca");
        return -1;
    }
    return 0;
}

/* Takes --prestop and --prestop-timeout S (or =S) out of argv (the rest are settings): 1 with
 * *timeout_s when --prestop is there, 0 when not, -1 after printing what is wrong. */
static int prestop_args(int *argc, char **argv, long *timeout_s)
{
    int i, n = 0, on = 0, given = 0;

    *timeout_s = 600;
    for (i = 0; i < *argc; i++) {
        const char *a = argv[i], *v = NULL;
        char *end;
        if (i > 0 && strcmp(a, "--prestop") == 0) {
            on = 1;
            continue;
        }
        if (i > 0 && strncmp(a, "--prestop-timeout", 17) == 0 && (!a[17] || a[17] == '=')) {
            v = a[17] ? a + 18 : (i + 1 < *argc ? argv[++i] : "");
            errno = 0;
            *timeout_s = strtol(v, &end, 10);
            if (!*v || *end || errno || *timeout_s <= 0 || *timeout_s > 86400) {
                fprintf(stderr,
                        "hoardd: --prestop-timeout takes seconds (1 to 86400), not "
                        "'%s'\n",
                        v);
                return -1;
            }
            given = 1;
            continue;
        }
        argv[n++] = argv[i];
    }
    *argc = n;
    argv[n] = NULL;
    if (given && !on) {
        fprintf(stderr, "hoardd: --prestop-timeout goes with --prestop\n");
        return -1;
    }
    return on;
}

/* hoardd --prestop: exit status 0 when the target's objects are elsewhere. */
static int prestop(const struct hd_config *cfg, long timeout_s, struct hd_tls **tls)
{
    char err[512];

    if (strcmp(hd_config_str(cfg, "role"), "target") != 0) {
        fprintf(stderr,
                "hoardd --prestop: only a target hands over objects (role is '%s'); "
                "proxies stop without it\n",
                hd_config_str(cfg, "role"));
        return 1;
    }
    if (tls_setup(cfg, tls) < 0)
        return 1;
    if (hd_target_prestop(cfg, timeout_s, stdout, err, sizeof(err)) < 0) {
        fprintf(stderr, "hoardd --prestop: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct hd_config *cfg = hd_config_new();
    struct hd_http_server *srv = NULL;
    struct hd_target *t = NULL;
    struct hd_proxy *px = NULL;
    struct hd_tls *tls = NULL;
    struct hd_http_cfg hc;
    enum hd_log_level lvl;
    char err[512];
    int print = 0, rc = 1, i, pre;
    long pre_timeout;
    const char *role;

    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage();
            return 0;
        }
    if ((pre = prestop_args(&argc, argv, &pre_timeout)) < 0)
        goto out;
    if (!cfg || hd_config_load(cfg, argc, argv, environ, &print, err, sizeof(err)) < 0) {
        fprintf(stderr, "hoardd: %s\n", cfg ? err : "out of memory");
        usage();
        goto out;
    }
    if (print) {
        hd_config_print(cfg, stdout);
        rc = 0;
        goto out;
    }
    if (pre) {
        rc = prestop(cfg, pre_timeout, &tls);
        goto out;
    }
    if (hd_log_level_parse(hd_config_str(cfg, "log.level"), &lvl) < 0) {
        fprintf(stderr, "hoardd: log.level must be debug, info, warn or error\n");
        goto out;
    }
    if (hd_log_open(hd_config_str(cfg, "log.error"), hd_config_str(cfg, "log.access"), lvl) < 0) {
        fprintf(stderr, "hoardd: cannot open log files: %s\n", strerror(errno));
        goto out;
    }
    crash_handlers();
#ifndef HD_COMMIT
#define HD_COMMIT "unknown"
#endif
    hd_metrics_process_init(HD_VERSION, HD_COMMIT);
    if (stop_signals((int)hd_config_int(cfg, "shutdown.timeout")) < 0) {
        fprintf(stderr, "hoardd: cannot set up the signal thread: %s\n", strerror(errno));
        goto out;
    }
    /* Per-request buffers (libcurl's 256 KiB transfer buffers in the relay and upstream
     * clients, relay windows, MHD pools) are freed and allocated again all the time; glibc's
     * defaults hand such blocks back to the kernel (mmap'ed chunks, trimmed arena tops) and
     * fault them in again, zeroed, on the next request. Measured on the S3 relay: page faults
     * and zeroing were a quarter of the proxy's CPU. Keep them instead, up to 8 MiB free at
     * an arena's top: above that a thread arena's top is only ever returned on a free (glibc's
     * malloc_trim does not shrink thread arenas' tops), and a burst must not stay resident.
     * What sits free inside the arenas goes back when the node is quiet (hd_http_idle_trim). */
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
    {
        /* a server wants the descriptors it is allowed (connections, open content files) */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    role = hd_config_str(cfg, "role");
    if (strcmp(role, "target") != 0 && strcmp(role, "proxy") != 0) {
        fprintf(stderr, "hoardd: role must be target or proxy, not '%s'\n", role);
        goto out;
    }
    if (*hd_config_str(cfg, "auth.keys") && !*hd_config_str(cfg, "cluster.secret") &&
        (role[0] == 'p' || *hd_config_str(cfg, "cluster.join"))) {
        /* without it a target cannot tell a proxy's redirect from a forged one */
        fprintf(stderr, "hoardd: auth.keys in a cluster needs cluster.secret too (the same "
                        "on every node)\n");
        goto out;
    }
    if (tls_setup(cfg, &tls) < 0)
        goto out;
    if (role[0] == 'p' && (rc = hd_proxy_new(cfg, &px)) < 0) {
        fprintf(stderr, "hoardd: cannot start proxy: %s\n", hd_strerror(rc));
        rc = 1;
        goto out;
    }
    if (role[0] == 't' && (rc = hd_target_new(cfg, &t)) < 0) {
        fprintf(stderr, "hoardd: cannot start target: %s\n", hd_strerror(rc));
        rc = 1;
        goto out;
    }
    memset(&hc, 0, sizeof(hc));
    hd_http_metrics_token(hd_config_str(cfg, "metrics.token"));
    hd_metrics_bucket_cap((int)hd_config_int(cfg, "metrics.buckets"));
    hc.listen = hd_config_str(cfg, "listen");
    hc.threads = (int)hd_config_int(cfg, "http.threads");
    if (hc.threads == 0 && t) {
        /* A target worker blocks in fsync for every PUT; with one worker per core a few
         * concurrent uploads stall every GET. Four per core keeps the disk busy while GETs
         * still find a free worker (measured: docs/performance.md). */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        hc.threads = 4 * (int)(n > 0 ? n : 1);
    }
    hc.timeout_s = (int)hd_config_int(cfg, "http.timeout");
    hc.max_conns = (int)hd_config_int(cfg, "http.max_conns");
    hc.mem_limit = (int)hd_config_int(cfg, "http.mem_limit");
    hc.handler = px ? hd_proxy_handle : hd_target_handle;
    hc.ctx = px ? (void *)px : (void *)t;
    hc.tls = tls;
    if ((rc = hd_http_start(&hc, &srv)) < 0) {
        fprintf(stderr, "hoardd: cannot listen on %s: %s\n", hc.listen, hd_strerror(rc));
        rc = 1;
        goto out;
    }
    /* cluster threads start once we can answer the primary's metasync */
    if ((rc = px ? hd_proxy_start(px) : hd_target_start(t)) < 0) {
        fprintf(stderr, "hoardd: cannot start the cluster thread: %s\n", hd_strerror(rc));
        rc = 1;
        goto out;
    }
    if (tls) {
        char desc[600];
        hd_tls_describe(tls, desc, sizeof(desc));
        HD_LOG(HD_INFO, NULL, "hoardd %s listening on https://%s (%s%s)", role, hc.listen, desc,
               hd_tls_client_auth() ? "; node calls need a client certificate" : "");
    } else {
        HD_LOG(HD_INFO, NULL, "hoardd %s listening on http://%s", role, hc.listen);
    }
    for (;;) { /* the signal thread posts on SIGINT/SIGTERM */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (sem_timedwait(&stop_sem, &ts) == 0)
            break;
        hd_http_idle_trim();
        if (atomic_exchange(&reload, 0))
            tls_reload(tls);
    }
    rc = 0;
out:
    hd_http_stop(srv);
    hd_proxy_free(px);
    hd_target_free(t);
    hd_tls_use(NULL);
    hd_tls_free(tls);
    hd_config_free(cfg);
    hd_log_close();
    return rc;
}
