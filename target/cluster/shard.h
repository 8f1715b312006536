/* shard: the target's part of a shard job (kind "shard"): builds the WebDataset tar shards of
 * a manifest that this target owns, pulling members from their owners. See shard.c. */
#ifndef HD_TARGET_SHARD_H
#define HD_TARGET_SHARD_H

#include "target/cluster/cluster.h"
#include "target/jobs/jobs.h"

/* Registers the "shard" job kind with js; cl must outlive it. */
int hd_shard_register(struct hd_jobs *js, struct hd_tcluster *cl);

#endif
