/* cli_config: the hoard CLI's config file of named profiles and the verbs around it
 * (`config show|profiles`, `completion bash`). The file is JSON (jansson):
 *   {"default": "NAME", "profiles": {"NAME": {"endpoint","access_key","secret_key","region"}}}
 * at $HOARD_CONFIG, else $XDG_CONFIG_HOME/hoard/config, else ~/.config/hoard/config. Main
 * thread only. */
#ifndef HD_CLI_CONFIG_H
#define HD_CLI_CONFIG_H

#include <stddef.h>

#include "tools/hoard/cli.h"

enum {
    HD_CLI_PROF_ENDPOINT,
    HD_CLI_PROF_ACCESS_KEY,
    HD_CLI_PROF_SECRET_KEY,
    HD_CLI_PROF_REGION,
    HD_CLI_PROF_NKEYS
};

struct hd_cli_config {
    char *path;         /* the config file's path (NULL without $HOME) */
    struct json_t *doc; /* its JSON, NULL when there is no file */
    const char *name;   /* the profile in use, NULL for none */
    const char *source; /* where its name came from: --profile, HOARD_PROFILE, config default */
    int chosen;         /* named by --profile or HOARD_PROFILE (then it beats AWS_* etc.) */
    const char *val[HD_CLI_PROF_NKEYS]; /* the profile's values (borrowed from doc), or NULL */
};

/* Reads the file and picks the profile: flag_profile (--profile), else $HOARD_PROFILE, else
 * the file's "default", else a profile named "default", else none. A missing file is no
 * error unless a profile was named. 0, HD_CLI_EXIT_USAGE with err set (bad file, unknown
 * profile), or -ENOMEM. Clean up with hd_cli_config_cleanup in every case. */
int hd_cli_config_load(struct hd_cli_config *c, const char *flag_profile, char *err, size_t errlen);
void hd_cli_config_cleanup(struct hd_cli_config *c);

#endif
