/* cli_obj: object helpers the hoard CLI's verbs share (cmd_object.c, cmd_xfer.c): whole
 * listings and ETag checks. hd_cli_list_all uses cli's connection: one thread per cli. */
#ifndef HD_CLI_OBJ_H
#define HD_CLI_OBJ_H

#include <jansson.h>

#include "tools/hoard/cli.h"

/* Appends every entry of B's listing under prefix ({"name","size","etag","mtime"[,"cached"]})
 * to entries; cached_only: only what the cluster holds of an S3-backed bucket.
 * HD_CLI_EXIT_OK, or the exit code after printing the error (what names it). */
int hd_cli_list_all(struct hd_cli *cli, const char *bucket, const char *prefix, int cached_only,
                    const char *what, json_t *entries);

/* An MD5 ETag that differs from the MD5 of the bytes moved: prints the mismatch and returns
 * HD_CLI_EXIT_API; else 0 (also for a multipart ETag, which is no MD5). */
int hd_cli_etag_check(const char *what, const char *etag, const char *md5);

#endif
