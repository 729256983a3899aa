/*
 * run_leftovers.h — what a killed `fsbroker run` leaves, cleared by the next.
 */
#ifndef FSB_RUN_LEFTOVERS_H
#define FSB_RUN_LEFTOVERS_H

/**
 * Each run holds a directory `<base>/<prefix><pid>` while it lasts
 * (fsb_run_socket_dir: its sockets, or nothing for an attached run). `own`
 * is this run's. A directory whose run is gone is a run that was killed:
 * its sockets are removed with it, and bwrap's inner process of any sandbox
 * it was starting is killed, which would otherwise wait for ever on its dead
 * parent (docs/runtime.md, "A killed run"). Best effort: failures are
 * logged at debug level, nothing is returned.
 */
void fsb_run_clear_leftovers(const char *own);

#endif
