/*
 * keep_awake.h — keep the CPUs from going idle between routed calls that
 * come in quick succession.
 *
 * A routed call is a ping-pong: the target traps and sleeps, the core
 * works, the target is woken. While the core works, the target's CPU has
 * nothing to do; when it is put to sleep (a halt, on a virtual machine an
 * exit to the hypervisor), waking it again for the answer costs far more
 * than the answer itself (docs/benchmarks.md, "Idle CPUs between calls").
 * While calls keep coming, a few threads of the idle scheduling class spin
 * on the CPUs nothing else wants: they give way at once to any real work
 * and stop spinning a short while after the last call.
 *
 * On by default; FSBROKER_KEEP_AWAKE=0 turns it off for the process.
 */
#ifndef FSB_KEEP_AWAKE_H
#define FSB_KEEP_AWAKE_H

#include <stdbool.h>

/** A supervisor starts: the first hold starts the threads (a failure to
 * start them is logged and costs only speed). */
void fsb_keep_awake_hold(void);

/** A supervisor ended: the last release stops and joins the threads. */
void fsb_keep_awake_release(void);

/** A routed call was received. True when it is part of a burst (it came
 * soon after the last answer): the threads spin until a while after its
 * answer. Cheap: a clock read and a few atomics; a system call only when
 * the threads sleep. */
bool fsb_keep_awake_call_begins(void);

/** The call is answered; `burst` is what fsb_keep_awake_call_begins said. */
void fsb_keep_awake_call_answered(bool burst);

#endif
