/* cli: the hoard admin CLI's shared context, option vocabulary, command table and exit codes.
 * Single-threaded tool: everything here runs on the main thread (signal handler only sets a flag).
 *
 * Adding a command: write `int handler(struct hd_cli *, int argc, char **argv)` (argv holds the
 * positional arguments only; options are already parsed into cli->opt[]) and add one row to the
 * table in main.c. Handlers return an exit code (enum hd_cli_exit). */
#ifndef HD_CLI_H
#define HD_CLI_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#define HD_CLI_VERSION "0.1.0"
#define HD_CLI_DEFAULT_ENDPOINT "http://127.0.0.1:8080"

/* Process exit codes; documented in docs/cli.md. */
enum hd_cli_exit {
    HD_CLI_EXIT_OK = 0,
    HD_CLI_EXIT_API = 1,     /* the server answered with an error, or a local file error */
    HD_CLI_EXIT_USAGE = 2,   /* bad command line */
    HD_CLI_EXIT_CONN = 3,    /* could not talk to the endpoint (connect, timeout, reset) */
    HD_CLI_EXIT_TIMEOUT = 4, /* job wait: the job was still running at --timeout */
    HD_CLI_EXIT_INTR = 130   /* interrupted by SIGINT/SIGTERM */
};

/* Every option the CLI knows. Global ones are accepted anywhere; others only by commands
 * that list them. */
enum hd_cli_optid {
    HD_CLI_OPT_ENDPOINT,
    HD_CLI_OPT_JSON,
    HD_CLI_OPT_HELP,
    HD_CLI_OPT_VERSION,
    HD_CLI_OPT_CFG_PROFILE, /* --profile: the config file's profile (cli_config.c) */
    HD_CLI_OPT_DELIMITER,
    HD_CLI_OPT_LIMIT,
    HD_CLI_OPT_TOKEN,
    HD_CLI_OPT_CONTENT_TYPE,
    HD_CLI_OPT_ACCESS_KEY,
    HD_CLI_OPT_SECRET_KEY,
    HD_CLI_OPT_UPSTREAM, /* caching tier (cmd_cache.c) */
    HD_CLI_OPT_PROFILE,  /* --upstream-profile: bucket create s3://B */
    HD_CLI_OPT_REGION,
    HD_CLI_OPT_STYLE,
    HD_CLI_OPT_REMOTE,
    HD_CLI_OPT_PREFIX, /* and --list, --template (shared with shard) */
    HD_CLI_OPT_REVALIDATE,
    HD_CLI_OPT_WAIT,
    HD_CLI_OPT_OFF,
    HD_CLI_OPT_TIMEOUT,
    HD_CLI_OPT_ARCHPATH, /* cmd_shard.c and object get */
    HD_CLI_OPT_TEMPLATE,
    HD_CLI_OPT_SIZE,
    HD_CLI_OPT_SEED,
    HD_CLI_OPT_KEY_RULE,
    HD_CLI_OPT_LIST,
    HD_CLI_OPT_RANGE,
    HD_CLI_OPT_MANIFEST,
    HD_CLI_OPT_ID,
    HD_CLI_OPT_NO_WAIT,
    HD_CLI_OPT_CONTINUE,
    HD_CLI_OPT_CACHED,    /* object ls */
    HD_CLI_OPT_RECURSIVE, /* object get; -r */
    HD_CLI_OPT_JOBS,      /* many-object verbs (cmd_xfer.c); -j */
    HD_CLI_OPT_DELETE,    /* sync */
    HD_CLI_OPT_TTL,       /* auth token */
    HD_CLI_OPT_EPOCHS,    /* cmd_plan.c */
    HD_CLI_OPT_NO_PREFETCH,
    HD_CLI_OPT_SHARDS,
    HD_CLI_OPT_GZIP,   /* shard create */
    HD_CLI_OPT_FORMAT, /* shard create, batch get */
    HD_CLI_OPT_COUNT
};

struct hd_cli_opt {
    const char *name; /* long name without "--" */
    int has_arg;
    int global;
    const char *arg_name; /* for usage text, e.g. "N" */
    const char *help;
};

struct hd_cli;
typedef int (*hd_cli_handler_fn)(struct hd_cli *cli, int argc, char **argv);

struct hd_cli_cmd {
    const char *noun;
    const char *verb; /* "" for a command that is its noun alone (hoard prefetch B) */
    hd_cli_handler_fn run;
    int min_args, max_args; /* positional argument count bounds */
    const char *args;       /* positional usage, e.g. "FILE|- B/O" */
    const char *summary;    /* one line */
    /* Command options, terminated by HD_CLI_OPT_COUNT; NULL for none. */
    const enum hd_cli_optid *opts;
    /* Those of opts the command cannot run without (help shows them unbracketed); NULL. */
    const enum hd_cli_optid *req;
};

struct hd_cli_http;   /* cli_http.h */
struct hd_cli_config; /* cli_config.h */

/* SigV4 credentials (strings borrowed from argv or the environment). access_key NULL: send
 * requests unsigned. */
struct hd_cli_cred {
    const char *access_key;
    const char *secret_key;
    const char *region;
};

struct hd_cli {
    const char *endpoint; /* normalised: scheme://host[:port][/prefix], no trailing '/' */
    int json;
    int progress; /* 1 when progress bars may be drawn (stderr TTY or HOARD_PROGRESS=1) */
    int verbose;  /* HOARD_DEBUG=1: libcurl verbose output on stderr */
    const char *opt[HD_CLI_OPT_COUNT]; /* parsed option values ("" for flags), NULL if absent */
    const char *noun;                  /* the command line's noun once known, else NULL */
    const struct hd_cli_cmd *cmd;      /* the command being run */
    struct hd_cli_http *http;          /* lazily created connection state */
    struct hd_cli_cred cred;           /* from --access-key/--secret-key or AWS_* env */
    struct hd_cli_config *config;      /* the config file's profile (never NULL in handlers) */
    char *endpoint_owned;
};

extern const struct hd_cli_opt hd_cli_opts[HD_CLI_OPT_COUNT];
/* While set, hd_cli_fail and hd_cli_usage_error print nothing (a best-effort look-up whose
 * failure is no failure of the command). Main thread only. */
extern int hd_cli_mute_errors;
/* Set by the SIGINT/SIGTERM handler; transfers poll it and abort. */
extern volatile sig_atomic_t hd_cli_interrupted;

/* Prints "hoard: <fmt>" and the usage of cli->noun (all commands when NULL) to stderr;
 * returns HD_CLI_EXIT_USAGE. */
int hd_cli_usage_error(struct hd_cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "hoard: <fmt>" to stderr and returns `code`. Under --json the line is a JSON object
 * instead: {"error": "<fmt>", "code": "Usage|Connection|Timeout|Interrupted|Error", "exit": N}. */
int hd_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* As hd_cli_fail with the JSON "code" given (the server's error code, e.g. "NoSuchKey"). */
int hd_cli_fail_code(int exit_code, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints j indented (2 spaces) and a newline on stdout (the --json output of every command);
 * j NULL (a failed json_pack) is out of memory. Returns the exit code. */
struct json_t;
int hd_cli_print_json(const struct json_t *j);

/* Handlers (cmd_bucket.c, cmd_object.c, cmd_cluster.c, cmd_job.c, cmd_shard.c). */
int hd_cli_bucket_create(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_ls(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_rm(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_du(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_cp(struct hd_cli *cli, int argc, char **argv);
int hd_cli_object_put(struct hd_cli *cli, int argc, char **argv);
int hd_cli_object_get(struct hd_cli *cli, int argc, char **argv);
int hd_cli_object_head(struct hd_cli *cli, int argc, char **argv);
int hd_cli_object_ls(struct hd_cli *cli, int argc, char **argv);
int hd_cli_object_rm(struct hd_cli *cli, int argc, char **argv);
/* cmd_plan.c */
int hd_cli_plan_create(struct hd_cli *cli, int argc, char **argv);
int hd_cli_plan_ls(struct hd_cli *cli, int argc, char **argv);
int hd_cli_plan_show(struct hd_cli *cli, int argc, char **argv);
int hd_cli_plan_rm(struct hd_cli *cli, int argc, char **argv);
/* cmd_cache.c */
int hd_cli_cloud_create(struct hd_cli *cli, const char *name);
int hd_cli_bucket_props(struct hd_cli *cli, int argc, char **argv);
int hd_cli_prefetch(struct hd_cli *cli, int argc, char **argv);
int hd_cli_evict(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_flush(struct hd_cli *cli, int argc, char **argv);
int hd_cli_bucket_show(struct hd_cli *cli, int argc, char **argv);
int hd_cli_cluster_show(struct hd_cli *cli, int argc, char **argv);
int hd_cli_cluster_maintenance(struct hd_cli *cli, int argc, char **argv);
int hd_cli_cluster_decommission(struct hd_cli *cli, int argc, char **argv);
int hd_cli_cluster_rebalance(struct hd_cli *cli, int argc, char **argv);
int hd_cli_auth_token(struct hd_cli *cli, int argc, char **argv);
int hd_cli_job_ls(struct hd_cli *cli, int argc, char **argv);
int hd_cli_job_show(struct hd_cli *cli, int argc, char **argv);
int hd_cli_job_wait(struct hd_cli *cli, int argc, char **argv);
/* job wait with the totals the caller knows from the start (0: the job's own). */
int hd_cli_job_wait_totals(struct hd_cli *cli, const char *id, uint64_t objs, uint64_t bytes);
int hd_cli_job_stop(struct hd_cli *cli, int argc, char **argv);
/* The command table (main.c), for completion. */
const struct hd_cli_cmd *hd_cli_commands(size_t *n);
/* cli_config.c */
int hd_cli_config_show(struct hd_cli *cli, int argc, char **argv);
int hd_cli_config_profiles(struct hd_cli *cli, int argc, char **argv);
int hd_cli_completion(struct hd_cli *cli, int argc, char **argv);
/* cmd_xfer.c: many objects at once on -j threads */
int hd_cli_put_dir(struct hd_cli *cli, const char *dir, const char *dst);
int hd_cli_get_recursive(struct hd_cli *cli, const char *src, const char *dir);
int hd_cli_rm_many(struct hd_cli *cli, const char *arg);
int hd_cli_sync(struct hd_cli *cli, int argc, char **argv);
/* cmd_shard.c */
int hd_cli_shard_create(struct hd_cli *cli, int argc, char **argv);
int hd_cli_shard_members(struct hd_cli *cli, int argc, char **argv);
int hd_cli_batch_get(struct hd_cli *cli, int argc, char **argv);

#endif
