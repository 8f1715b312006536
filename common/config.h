/* config: the one table of settings (key, type, default, bounds). Sources in order of
 * precedence: built-in default < config file < HOARD_* environment < command line.
 * Loaded once at startup on the main thread; read-only afterwards (any thread). */
#ifndef HD_CONFIG_H
#define HD_CONFIG_H

#include <stdio.h>

struct hd_config;

struct hd_config *hd_config_new(void);
void hd_config_free(struct hd_config *c);

/* Applies file (from --config or HOARD_CONFIG), env, then argv. Non-option arguments and
 * --print-config are reported through *print. On error writes a one-line message to err
 * (size errlen) and returns -EINVAL. */
int hd_config_load(struct hd_config *c, int argc, char **argv, char **envp, int *print, char *err,
                   size_t errlen);
int hd_config_set(struct hd_config *c, const char *key, const char *value, char *err,
                  size_t errlen);

const char *hd_config_str(const struct hd_config *c, const char *key);
long long hd_config_int(const struct hd_config *c, const char *key);
int hd_config_bool(const struct hd_config *c, const char *key);

/* Prints "key = value  # source" for every setting; secrets are masked. */
void hd_config_print(const struct hd_config *c, FILE *out);

#endif
