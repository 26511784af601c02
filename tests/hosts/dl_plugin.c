// SPDX-License-Identifier: MIT
/* A plugin with sp probes that dlopen_host loads at run time. */
#include <sp_probe.h>

void plugin_run(void);

void plugin_run(void)
{
	SP_QUERY_BEGIN("plugin_query");
	SP_QUERY_END("plugin_query");
}
