/* cli_config: the hoard CLI's config file of named profiles (endpoint, keys, region), the
 * `config show|profiles` verbs and `completion bash`. Main thread only. */
#include "tools/hoard/cli_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/hoard/cli_fmt.h"

static const char *const prof_keys[HD_CLI_PROF_NKEYS] = {"endpoint", "access_key", "secret_key",
                                                         "region"};

/* $HOARD_CONFIG, else $XDG_CONFIG_HOME/hoard/config, else $HOME/.config/hoard/config. */
static int config_path(struct hd_cli_config *c)
{
    const char *e = getenv("HOARD_CONFIG"), *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
    struct hd_buf b;

    hd_buf_init(&b);
    if (e && *e)
        hd_buf_puts(&b, e);
    else if (x && *x)
        hd_buf_printf(&b, "%s/hoard/config", x);
    else if (h && *h)
        hd_buf_printf(&b, "%s/.config/hoard/config", h);
    else
        return 0; /* no home: no config file */
    if (b.oom) {
        hd_buf_cleanup(&b);
        return -ENOMEM;
    }
    c->path = hd_buf_steal(&b, NULL);
    return 0;
}

int hd_cli_config_load(struct hd_cli_config *c, const char *flag_profile, char *err, size_t errlen)
{
    const char *env = getenv("HOARD_PROFILE"), *name = NULL;
    json_t *profs, *p;
    json_error_t jerr;
    size_t i;
    FILE *f;

    memset(c, 0, sizeof(*c));
    err[0] = '\0';
    if (flag_profile && *flag_profile) {
        name = flag_profile;
        c->source = "--profile";
    } else if (env && *env) {
        name = env;
        c->source = "HOARD_PROFILE";
    }
    c->chosen = name != NULL;
    if (config_path(c) < 0)
        return -ENOMEM;
    f = c->path ? fopen(c->path, "r") : NULL;
    if (!f) {
        if (c->path && errno != ENOENT) {
            snprintf(err, errlen, "cannot read config file %s: %s", c->path, strerror(errno));
            return HD_CLI_EXIT_USAGE;
        }
        if (name) {
            snprintf(err, errlen, "profile '%s' (%s): no config file %s", name, c->source,
                     c->path ? c->path : "(no $HOME)");
            return HD_CLI_EXIT_USAGE;
        }
        return 0;
    }
    c->doc = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!json_is_object(c->doc)) {
        snprintf(err, errlen, "config file %s: %s", c->path,
                 c->doc ? "not a JSON object" : jerr.text);
        return HD_CLI_EXIT_USAGE;
    }
    profs = json_object_get(c->doc, "profiles");
    if (profs && !json_is_object(profs)) {
        snprintf(err, errlen, "config file %s: \"profiles\" is not an object", c->path);
        return HD_CLI_EXIT_USAGE;
    }
    if (!name) { /* the file's default, else a profile called "default" */
        name = json_string_value(json_object_get(c->doc, "default"));
        c->source = "config default";
        if (!name && json_object_get(profs, "default"))
            name = "default";
    }
    if (!name)
        return 0;
    p = json_object_get(profs, name);
    if (!json_is_object(p)) {
        snprintf(err, errlen, "no profile '%s' in %s (%s)", name, c->path, c->source);
        return HD_CLI_EXIT_USAGE;
    }
    c->name = name;
    for (i = 0; i < HD_CLI_PROF_NKEYS; i++) {
        json_t *v = json_object_get(p, prof_keys[i]);
        if (v && !json_is_string(v)) {
            snprintf(err, errlen, "config file %s: profile '%s': \"%s\" is not a string", c->path,
                     name, prof_keys[i]);
            return HD_CLI_EXIT_USAGE;
        }
        c->val[i] = json_string_value(v);
        if (c->val[i] && !*c->val[i])
            c->val[i] = NULL;
    }
    return 0;
}

void hd_cli_config_cleanup(struct hd_cli_config *c)
{
    json_decref(c->doc);
    free(c->path);
    memset(c, 0, sizeof(*c));
}

/* ---- config show | profiles ------------------------------------------------------------- */

int hd_cli_config_show(struct hd_cli *cli, int argc, char **argv)
{
    const struct hd_cli_config *c = cli->config;
    const char *ak = cli->cred.access_key;
    char masked[64];
    json_t *j;
    int rc;

    (void)argc;
    (void)argv;
    if (ak) /* enough to tell keys apart, never the secret */
        snprintf(masked, sizeof(masked), "%.4s...", ak);
    if (cli->json) {
        j = json_pack("{s:s?, s:s?, s:s?, s:s, s:s?, s:b, s:s}", "config_file", c->path, "profile",
                      c->name, "profile_source", c->name ? c->source : NULL, "endpoint",
                      cli->endpoint, "access_key", ak ? masked : NULL, "secret_key_set",
                      cli->cred.secret_key != NULL, "region", cli->cred.region);
        rc = hd_cli_print_json(j);
        json_decref(j);
        return rc;
    }
    printf("%-12s %s\n", "config file", c->path ? c->path : "-");
    printf("%-12s %s%s%s%s\n", "profile", c->name ? c->name : "-", c->name ? " (" : "",
           c->name ? c->source : "", c->name ? ")" : "");
    printf("%-12s %s\n", "endpoint", cli->endpoint);
    printf("%-12s %s\n", "access key", ak ? masked : "- (requests unsigned)");
    printf("%-12s %s\n", "secret key", cli->cred.secret_key ? "set" : "-");
    printf("%-12s %s\n", "region", cli->cred.region);
    return HD_CLI_EXIT_OK;
}

int hd_cli_config_profiles(struct hd_cli *cli, int argc, char **argv)
{
    json_t *profs = json_object_get(cli->config->doc, "profiles"), *p, *arr = json_array();
    const char *name;
    int rc = HD_CLI_EXIT_OK;

    (void)argc;
    (void)argv;
    json_object_foreach(profs, name, p)
    {
        if (cli->json)
            json_array_append_new(
                arr, json_pack("{s:s, s:s?, s:b}", "name", name, "endpoint",
                               json_string_value(json_object_get(p, "endpoint")), "active",
                               cli->config->name && !strcmp(name, cli->config->name)));
        else
            printf("%s\n", name);
    }
    if (cli->json) {
        json_t *j = json_pack("{s:O}", "profiles", arr);
        rc = hd_cli_print_json(j);
        json_decref(j);
    }
    json_decref(arr);
    return rc;
}

/* ---- completion ------------------------------------------------------------------------- */

int hd_cli_completion(struct hd_cli *cli, int argc, char **argv)
{
    const struct hd_cli_cmd *cmds;
    size_t n, i, k;

    (void)cli;
    if (argc != 1 || strcmp(argv[0], "bash") != 0)
        return hd_cli_usage_error(cli, "only 'bash' completion is available");
    cmds = hd_cli_commands(&n);
    puts("# hoard bash completion: source it, or save it as\n"
         "#   ~/.local/share/bash-completion/completions/hoard\n"
         "# (generated by `hoard completion bash` from the CLI's command table)\n"
         "_hoard() {\n"
         "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "    local noun='' verb='' w i opts='' globals=''");
    fputs("    globals='", stdout);
    for (i = 0; i < HD_CLI_OPT_COUNT; i++)
        if (hd_cli_opts[i].global)
            printf("%s--%s", i ? " " : "", hd_cli_opts[i].name);
    puts("'");
    puts("    for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "        w=${COMP_WORDS[i]}\n"
         "        case $w in\n"
         "        --endpoint|--access-key|--secret-key|--profile) ((i++)); continue ;;\n"
         "        -*) continue ;;\n"
         "        esac\n"
         "        if [[ -z $noun ]]; then noun=$w\n"
         "        elif [[ -z $verb ]]; then verb=$w; fi\n"
         "    done\n"
         "    case $prev in\n"
         "    --profile)\n"
         "        COMPREPLY=($(compgen -W \"$(hoard config profiles 2>/dev/null)\" -- \"$cur\"))\n"
         "        return ;;\n"
         "    --endpoint|--access-key|--secret-key) COMPREPLY=(); return ;;\n"
         "    esac");
    /* nouns, then verbs per noun, then options per command */
    fputs("    if [[ -z $noun ]]; then\n        COMPREPLY=($(compgen -W '", stdout);
    for (i = 0; i < n; i++) {
        for (k = 0; k < i; k++)
            if (strcmp(cmds[k].noun, cmds[i].noun) == 0)
                break;
        if (k == i)
            printf("%s%s", i ? " " : "", cmds[i].noun);
    }
    puts(" help completion $globals' -- \"$cur\"))\n        return\n    fi");
    puts("    case $noun in");
    for (i = 0; i < n; i++) {
        for (k = 0; k < i; k++)
            if (strcmp(cmds[k].noun, cmds[i].noun) == 0)
                break;
        if (k < i || !*cmds[i].verb)
            continue;
        printf("    %s)\n        if [[ -z $verb ]]; then\n            COMPREPLY=($(compgen -W '",
               cmds[i].noun);
        for (k = i; k < n; k++)
            if (strcmp(cmds[k].noun, cmds[i].noun) == 0)
                printf("%s%s", k == i ? "" : " ", cmds[k].verb);
        puts("' -- \"$cur\"))\n            return\n        fi ;;");
    }
    puts("    esac\n    case \"$noun $verb\" in");
    for (i = 0; i < n; i++) {
        const enum hd_cli_optid *o;
        if (*cmds[i].verb)
            printf("    '%s %s') opts='", cmds[i].noun, cmds[i].verb);
        else /* a noun-alone command: "verb" holds its first argument */
            printf("    '%s '*) opts='", cmds[i].noun);
        for (o = cmds[i].opts; o && *o != HD_CLI_OPT_COUNT; o++)
            printf("%s--%s", o == cmds[i].opts ? "" : " ", hd_cli_opts[*o].name);
        puts("' ;;");
    }
    puts("    esac\n"
         "    if [[ $cur == -* ]]; then\n"
         "        COMPREPLY=($(compgen -W \"$opts $globals\" -- \"$cur\"))\n"
         "    elif [[ $noun == completion ]]; then\n"
         "        COMPREPLY=($(compgen -W 'bash' -- \"$cur\"))\n"
         "    else\n"
         "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "    fi\n"
         "}\n"
         "complete -o filenames -F _hoard hoard");
    return HD_CLI_EXIT_OK;
}
