// SPDX-License-Identifier: MIT
/*
 * coll/exanet: the component's state in this process, which the module and
 * the operations read: the MCA parameters (registered by
 * coll_exanet_component.c, which also sets them at open), the probe's
 * outcome and the statistics.  Kept apart from the component structure,
 * which names the component's calls, so that no file below it uses it.
 */
#include "coll_exanet.h"

mca_coll_exanet_state_t mca_coll_exanet_state = {
	.priority = 90,
	.verbose = 0,
	.min_ranks = 2,
	.chunk_size = EXANET_COLL_MAX_LEN,
	.max_bytes = COLL_EXANET_MAX_BYTES,
	.timeout = 0,
	.stats = false,
	.device = NULL,
	.output = -1,
	.probe = -1,
};
