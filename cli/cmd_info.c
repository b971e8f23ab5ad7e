/* cmd_info.c — (to be written) `jepa info`. */
#include "cli/cli.h"
int cmd_info(int argc, char **argv) { (void)argc, (void)argv; return cli_fail(NULL, "info: not written yet"); }
