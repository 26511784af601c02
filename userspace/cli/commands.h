/* SPDX-License-Identifier: MIT */
/* The sptrace commands, main's command table: nothing else calls them. */
#ifndef SPTRACE_COMMANDS_H
#define SPTRACE_COMMANDS_H

/* Each returns the process exit status. argv[0] is the command name. */
int cmd_trace(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_mem(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif /* SPTRACE_COMMANDS_H */
