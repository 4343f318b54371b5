/* hc_sigbus.h - a read of a file mapping that faults (SIGBUS: the file was
 * truncated under us, or its storage failed) becomes an error naming the
 * file instead of killing the process (docs/robustness.md, "SIGBUS").
 *
 * Design. A mapping is registered with hc_sigbus_watch. When SIGBUS hits an
 * address inside a registered range, the handler maps zero pages over the
 * rest of that range (from the faulting page on), counts the fault and
 * returns: the faulting instruction runs again and reads zeros, in whichever
 * thread it was (the main thread or an OpenMP worker). The owner of the
 * mapping asks hc_sigbus_faults at its next tensor boundary and fails the run
 * there; data read after the fault is never trusted. Nothing jumps out of the
 * handler: siglongjmp cannot leave an OpenMP parallel region (the other
 * threads would wait at its barrier forever) and would skip the interrupted
 * code's frees and unlocks.
 *
 * State. A signal disposition belongs to the process, so this is the one
 * place with process-wide state: the installed handler, the previous one
 * (faults outside every registered range go to it, or kill the process as
 * before), and a fixed table of ranges updated with C11 atomics only, so the
 * handler may read it at any moment. The handler calls only mmap, sigaction
 * and atomic operations. */
#ifndef HC_SIGBUS_H
#define HC_SIGBUS_H

#include <stddef.h>

/* Ranges watched at once (one per open safetensors file); past it a
 * mapping is simply not protected. */
#define HC_SIGBUS_SLOTS 4096

/* Installs the handler; idempotent, thread-safe. The program calls it (the
 * CLI does, first thing): a library does not take over a signal on its own.
 * Returns 0, or -1 when sigaction fails. */
int hc_sigbus_install(void);

/* Registers [addr, addr + len) and returns its slot, or -1 when the table is
 * full. Pair with hc_sigbus_unwatch before the range is unmapped. */
int hc_sigbus_watch(const void *addr, size_t len);

/* Faults seen in slot's range so far (0 for slot -1). */
unsigned hc_sigbus_faults(int slot);

/* Unregisters slot (-1 is a no-op). */
void hc_sigbus_unwatch(int slot);

#endif
