/*
 * pack_tests.h — which pack contents have passed their self-tests, so that
 * a core runs them once per content rather than at every start (DESIGN
 * §4.2; docs/rule-packs.md, "Self-tests").
 *
 * A key names the code exactly: the SHA-256 of every policy module and
 * pack file loaded, with the variables and the platform (lua_host.h's code
 * digest). The keys live in <state dir>/pack-tests, one per line, newest
 * first, at most FSB_PACK_TESTS_KEPT; the state dir is hidden from
 * sandboxed commands, and a key can only say "these very bytes passed",
 * never stand for an edited file.
 */
#ifndef FSB_PACK_TESTS_H
#define FSB_PACK_TESTS_H

#include <stdbool.h>

#define FSB_PACK_TESTS_KEPT 32

/** Whether `key` (64 hex digits) is recorded under `state_dir`. */
bool fsb_pack_tests_passed(const char *state_dir, const char *key);

/** Record `key` first, keeping the newest FSB_PACK_TESTS_KEPT; 0 or
 * -errno (a key not recorded only means the tests run again next time). */
int fsb_pack_tests_record(const char *state_dir, const char *key);

#endif
