/* copy: the target's part of a bucket-to-bucket copy job (kind "copy", args {"to": DST,
 * "prefix"?}): every object of the job's bucket held here is written as DST/name to DST's
 * owner. See copy.c. */
#ifndef HD_TARGET_COPY_H
#define HD_TARGET_COPY_H

#include "target/cluster/cluster.h"
#include "target/jobs/jobs.h"

/* Registers the "copy" job kind with js; cl must outlive it. */
int hd_copy_register(struct hd_jobs *js, struct hd_tcluster *cl);

#endif
