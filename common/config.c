#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

enum kind { STR, INT, BOOL };

struct def {
    const char *key;
    enum kind kind;
    const char *dflt;
    long long min, max;
    int secret;
    const char *help;
};

/* The single table of settings. Keep docs/operations.md in step. */
static const struct def defs[] = {
    {"role", STR, "target", 0, 0, 0, "target | proxy"},
    {"listen", STR, "127.0.0.1:8080", 0, 0, 0, "host:port to serve HTTP on"},
    {"public_url", STR, "", 0, 0, 0, "URL clients use to reach this node (default http://listen)"},
    {"data", STR, "./.hoard/data", 0, 0, 0, "data directory (node state)"},
    {"mountpaths", STR, "", 0, 0, 0, "comma-separated object directories (default DATA/mp1)"},
    {"auth.keys", STR, "", 0, 0, 1, "AK:SK[:rw|ro|B=ro;B=rw][,...] S3 keys; empty = anonymous"},
    {"s3.region", STR, "us-east-1", 0, 0, 0, "region reported by GetBucketLocation"},
    {"s3.domain", STR, "", 0, 0, 0, "virtual-host style: Host BUCKET.<domain> names the bucket"},
    {"http.threads", INT, "0", 0, 256, 0,
     "HTTP worker threads (0 = 4 per core on targets, 1 per core on proxies)"},
    {"http.timeout", INT, "60", 1, 3600, 0, "idle connection timeout, seconds"},
    {"http.max_conns", INT, "4096", 16, 1000000, 0, "concurrent connection limit"},
    {"http.mem_limit", INT, "65536", 8192, 1048576, 0,
     "per-connection memory (bounds the request header size)"},
    {"tls.cert", STR, "", 0, 0, 0,
     "PEM certificate (chain) to serve https with; empty = plain http (reloaded on SIGHUP)"},
    {"tls.key", STR, "", 0, 0, 0, "PEM private key of tls.cert"},
    {"tls.ca", STR, "", 0, 0, 0,
     "PEM CA bundle node calls verify peers against (empty = the system's)"},
    {"tls.verify_host", BOOL, "true", 0, 0, 0,
     "node calls check the peer certificate's names against its URL (false: the CA only)"},
    {"tls.client_auth", BOOL, "false", 0, 0, 0,
     "node calls must present a client certificate signed by tls.ca (mutual TLS)"},
    {"metrics.buckets", INT, "64", 0, 1024, 0,
     "buckets with /metrics series of their own; the rest count as bucket=\"_other\""},
    {"metrics.token", STR, "", 0, 0, 1,
     "bearer token GET /metrics requires (Prometheus authorization.credentials); empty = open"},
    {"shutdown.timeout", INT, "10", 1, 3600, 0,
     "seconds the stop on SIGTERM may take before the process exits anyway"},
    {"log.level", STR, "info", 0, 0, 0, "debug | info | warn | error"},
    {"log.error", STR, "-", 0, 0, 0, "error log file (- = stderr)"},
    {"log.access", STR, "", 0, 0, 0, "access log file (- = stdout, empty = off)"},
    {"store.fsync", BOOL, "true", 0, 0, 0, "fsync objects before acknowledging a PUT"},
    {"store.commit_workers", INT, "16", 0, 1024, 0,
     "threads that commit PUTs (fsync, rename, catalog) while the connection waits; 0 = on "
     "the HTTP worker"},
    {"store.max_object", INT, "5497558138880", 0, 5497558138880LL, 0, "largest object, bytes"},
    {"store.meta_cache", INT, "200000", 0, 100000000, 0,
     "catalog rows of recently read objects kept in memory for GET/HEAD (0 = off)"},
    {"store.open_files", INT, "4096", 0, 1000000, 0,
     "content files of cached rows kept open (at most a quarter of the fd limit; 0 = none)"},
    {"node.id", STR, "", 0, 0, 0, "node id (empty: generated once, kept in DATA/node.db)"},
    {"cluster.join", STR, "", 0, 0, 0,
     "primary proxy URL to join (empty: a proxy is the primary, a target is standalone)"},
    {"cluster.secret", STR, "", 0, 0, 1,
     "HMAC secret for proxy->target and intra-cluster calls (empty: no checks)"},
    {"cluster.heartbeat_ms", INT, "1000", 50, 600000, 0, "heartbeat interval, milliseconds"},
    {"cluster.dead_after", INT, "5", 2, 1000, 0,
     "heartbeat intervals of silence after which a node leaves the smap"},
    {"cluster.loop_stall_ms", INT, "120000", 1000, 86400000, 0,
     "primary proxy: a loop thread stuck this long lets the lease lapse (another proxy takes "
     "over)"},
    {"s3.redirect", BOOL, "false", 0, 0, 0, "S3 object requests get 307 instead of a relay"},
    {"s3.complete_keepalive", INT, "1073741824", 0, 9223372036854775807LL, 0,
     "a CompleteMultipartUpload of this many bytes or more (native and write-back buckets) "
     "answers 200 when its assembly ends or has run s3.complete_keepalive_ms, then a space every "
     "s3.complete_keepalive_ms until its result; "
     "a CopyObject still copying after s3.complete_keepalive_ms does the same "
     "(0 = neither)"},
    {"s3.complete_keepalive_ms", INT, "5000", 10, 50000, 0,
     "interval of those spaces (under the 60 s read timeouts of clients and of the relay)"},
    {"native.redirect", BOOL, "true", 0, 0, 0,
     "native /v1/objects requests get 307 (false: relayed through the proxy)"},
    /* caching tier (docs/caching.md) */
    {"upstream.endpoint", STR, "", 0, 0, 0,
     "default upstream S3 URL: unknown buckets found there are registered on first access"},
    {"upstream.region", STR, "us-east-1", 0, 0, 0, "region of the default upstream"},
    {"upstream.style", STR, "path", 0, 0, 0, "path | virtual addressing of the default upstream"},
    {"upstream.profile", STR, "default", 0, 0, 0, "credential profile of the default upstream"},
    {"upstream.credentials", STR, "", 0, 0, 0,
     "AWS-style credentials file (default $AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials)"},
    {"upstream.connect_timeout_ms", INT, "5000", 100, 600000, 0, "upstream connect timeout"},
    {"upstream.timeout", INT, "3600", 1, 86400, 0, "upstream object transfer limit, seconds"},
    {"upstream.meta_timeout", INT, "30", 1, 3600, 0, "upstream HEAD/DELETE/listing limit, seconds"},
    {"upstream.low_speed_time", INT, "30", 1, 3600, 0,
     "abort an upstream transfer below 1 KiB/s for this many seconds"},
    {"upstream.retries", INT, "3", 0, 10, 0, "retries on upstream 5xx, timeouts, refusals"},
    {"upstream.backoff_ms", INT, "100", 1, 60000, 0, "first retry delay (doubles)"},
    {"upstream.workers", INT, "64", 1, 1024, 0,
     "threads for upstream transfers (cold GETs, write-through)"},
    {"cache.range_fill", BOOL, "true", 0, 0, 0,
     "a ranged cold GET also fills the whole object in the background"},
    {"cache.atime_flush_ms", INT, "5000", 100, 3600000, 0, "write batched access times every"},
    {"space.capacity", INT, "0", 0, 9223372036854775807LL, 0,
     "bytes per mountpath (0 = the filesystem's size)"},
    {"space.low", INT, "75", 1, 100, 0, "LRU eviction stops below this % of capacity"},
    {"space.high", INT, "90", 1, 100, 0, "LRU eviction starts above this % of capacity"},
    {"space.oos", INT, "95", 1, 100, 0, "writes fail with 507 at this % of capacity"},
    {"space.check_ms", INT, "5000", 50, 3600000, 0, "how often usage is checked"},
    {"lifecycle.interval_ms", INT, "3600000", 100, 86400000, 0,
     "how often each target applies its buckets' lifecycle rules"},
    {"lifecycle.day_ms", INT, "86400000", 1000, 86400000, 0,
     "the length of a lifecycle rule's day (shorter only to test rules)"},
    {"prefetch.workers", INT, "8", 1, 256, 0, "parallel fetches per target in a prefetch job"},
    {"writeback.workers", INT, "4", 0, 64, 0,
     "parallel uploads per target from the write-back queue (0: none, the queue only grows)"},
    {"writeback.max_bps", INT, "0", 0, 9223372036854775807LL, 0,
     "write-back upload bandwidth per target, bytes/s (0 = unlimited)"},
    {"writeback.dirty_max", INT, "0", 0, 9223372036854775807LL, 0,
     "dirty bytes per target before write-back PUTs get 503 SlowDown (0 = half the capacity)"},
    {"writeback.multipart_threshold", INT, "5368709120", 5242880, 5368709120LL, 0,
     "write-back: objects larger than this (written here as one PUT) go upstream in parts"},
    {"writeback.part_size", INT, "67108864", 5242880, 5368709120LL, 0,
     "write-back: part size of those multipart uploads (raised to stay within 10000 parts)"},
    {"writeback.backoff_ms", INT, "500", 10, 3600000, 0, "first write-back retry delay (doubles)"},
    {"writeback.backoff_max_ms", INT, "30000", 10, 86400000, 0,
     "longest write-back retry delay (also the retry period of permanent failures)"},
    {"plan.window", INT, "64", 1, 100000, 0,
     "epoch plans: the least look-ahead, in a target's objects (grown from measured rates)"},
    {"plan.window_max", INT, "1024", 1, 1000000, 0,
     "epoch plans: the most look-ahead, in a target's objects (also at most half the cache)"},
    {"plan.workers", INT, "4", 1, 256, 0, "epoch plans: parallel prefetches per target"},
    {"plan.max_bps", INT, "0", 0, 9223372036854775807LL, 0,
     "epoch plans: prefetch bandwidth per target, bytes/s (0 = unbounded)"},
    {"plan.idle_expire_s", INT, "3600", 1, 31536000, 0,
     "epoch plans: a plan nobody read for this long is dropped"},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static const char *const srcnames[] = {"default", "file", "env", "argv"};

struct hd_config {
    char *val[NDEFS];
    int src[NDEFS];
};

static int find(const char *key)
{
    size_t i;

    for (i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].key, key) == 0)
            return (int)i;
    return -1;
}

struct hd_config *hd_config_new(void)
{
    struct hd_config *c = calloc(1, sizeof(*c));
    size_t i;

    if (!c)
        return NULL;
    for (i = 0; i < NDEFS; i++) {
        c->val[i] = strdup(defs[i].dflt);
        if (!c->val[i]) {
            hd_config_free(c);
            return NULL;
        }
    }
    return c;
}

void hd_config_free(struct hd_config *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < NDEFS; i++)
        free(c->val[i]);
    free(c);
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off"))
        *out = 0;
    else
        return -EINVAL;
    return 0;
}

static int set_src(struct hd_config *c, const char *key, const char *value, int src, char *err,
                   size_t errlen)
{
    int i = find(key), b;
    char *end, *dup;
    long long n;

    if (i < 0) {
        snprintf(err, errlen, "unknown setting '%s'", key);
        return -EINVAL;
    }
    switch (defs[i].kind) {
    case INT:
        errno = 0;
        n = strtoll(value, &end, 10);
        if (errno || end == value || *end || n < defs[i].min || n > defs[i].max) {
            snprintf(err, errlen, "%s: '%s' is not an integer in [%lld, %lld]", key, value,
                     defs[i].min, defs[i].max);
            return -EINVAL;
        }
        break;
    case BOOL:
        if (parse_bool(value, &b) < 0) {
            snprintf(err, errlen, "%s: '%s' is not a boolean (true/false)", key, value);
            return -EINVAL;
        }
        break;
    case STR:
        break;
    }
    dup = strdup(value);
    if (!dup) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    free(c->val[i]);
    c->val[i] = dup;
    c->src[i] = src;
    return 0;
}

int hd_config_set(struct hd_config *c, const char *key, const char *value, char *err, size_t errlen)
{
    return set_src(c, key, value, 3, err, errlen);
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int load_file(struct hd_config *c, const char *path, char *err, size_t errlen)
{
    char line[4096], msg[256];
    FILE *f = fopen(path, "r");
    int lineno = 0, rc = 0;

    if (!f) {
        snprintf(err, errlen, "config file %s: %s", path, strerror(errno));
        return -EINVAL;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = trim(line), *eq;
        lineno++;
        if (!*p || *p == '#')
            continue;
        eq = strchr(p, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = -EINVAL;
            break;
        }
        *eq = '\0';
        if (set_src(c, trim(p), trim(eq + 1), 1, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -EINVAL;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* HOARD_AUTH_KEYS -> auth.keys: env names are keys uppercased with '.' as '_'. */
static int env_key(const char *name, size_t n, char *key, size_t max)
{
    size_t i, j;

    for (i = 0; i < NDEFS; i++) {
        const char *k = defs[i].key;
        if (strlen(k) != n)
            continue;
        for (j = 0; j < n; j++) {
            char want = k[j] == '.' ? '_' : (char)toupper((unsigned char)k[j]);
            if (name[j] != want)
                break;
        }
        if (j == n) {
            snprintf(key, max, "%s", k);
            return 0;
        }
    }
    return -ENOENT;
}

int hd_config_load(struct hd_config *c, int argc, char **argv, char **envp, int *print, char *err,
                   size_t errlen)
{
    const char *file = NULL;
    char key[64], msg[256];
    int i, rc;

    *print = 0;
    for (i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], "HOARD_CONFIG=", 13) == 0)
            file = envp[i] + 13;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            file = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            file = argv[i] + 9;
    }
    if (file && *file && (rc = load_file(c, file, err, errlen)) < 0)
        return rc;
    for (i = 0; envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        if (strncmp(envp[i], "HOARD_", 6) != 0 || !eq)
            continue;
        if (env_key(envp[i] + 6, (size_t)(eq - envp[i] - 6), key, sizeof(key)) < 0)
            continue; /* HOARD_ENDPOINT etc. belong to the CLI */
        if (set_src(c, key, eq + 1, 2, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "environment %.*s: %s", (int)(eq - envp[i]), envp[i], msg);
            return -EINVAL;
        }
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v, *eq;
        if (strcmp(a, "--print-config") == 0) {
            *print = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", a);
            return -EINVAL;
        }
        a += 2;
        eq = strchr(a, '=');
        if (eq) {
            snprintf(key, sizeof(key), "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--%s needs a value", a);
                return -EINVAL;
            }
            snprintf(key, sizeof(key), "%s", a);
            v = argv[++i];
        }
        if (strcmp(key, "config") == 0)
            continue;
        if ((rc = set_src(c, key, v, 3, err, errlen)) < 0)
            return rc;
    }
    return 0;
}

const char *hd_config_str(const struct hd_config *c, const char *key)
{
    int i = find(key);

    return i < 0 ? "" : c->val[i];
}

long long hd_config_int(const struct hd_config *c, const char *key)
{
    int i = find(key);

    return i < 0 ? 0 : strtoll(c->val[i], NULL, 10);
}

int hd_config_bool(const struct hd_config *c, const char *key)
{
    int i = find(key), b = 0;

    if (i >= 0)
        parse_bool(c->val[i], &b);
    return b;
}

void hd_config_print(const struct hd_config *c, FILE *out)
{
    size_t i;

    for (i = 0; i < NDEFS; i++) {
        const char *v = c->val[i];
        if (defs[i].secret && *v)
            v = "********";
        fprintf(out, "%-18s = %-28s # %s (%s)\n", defs[i].key, v, defs[i].help,
                srcnames[c->src[i]]);
    }
}
