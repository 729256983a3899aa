/*
 * fuzz.h — what every fuzz harness in tests/fuzz defines: libFuzzer's entry
 * point, also called by replay.c when the harness is built without
 * libFuzzer. A harness returns 0 for every input; a crash, a sanitizer
 * report or an abort() is the only way it says an input found a bug.
 */
#ifndef FSB_FUZZ_H
#define FSB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Set up once before the first input (every harness defines it). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
