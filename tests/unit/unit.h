/*
 * unit.h — what every cmocka unit test of core/ includes.
 *
 * Leaks are caught by the sanitizer run (`SANITIZE=address,undefined`,
 * LeakSanitizer included), which covers the core's own allocations as well as
 * libuv's, cJSON's and Lua's.
 */
#ifndef FSB_TEST_UNIT_H
#define FSB_TEST_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#endif
