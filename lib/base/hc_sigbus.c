/* hc_sigbus.c - SIGBUS on a watched mapping becomes zero pages and a fault
 * count (see hc_sigbus.h for the design). */
#include "hc_sigbus.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* begin == 0: free; BUSY: being filled in (the handler skips it). */
#define BUSY ((uintptr_t)1)

typedef struct {
    atomic_uintptr_t begin, end;
    atomic_uint faults;
} range;

/* Process-wide by necessity (hc_sigbus.h, "State"). */
static range ranges[HC_SIGBUS_SLOTS];
static struct sigaction previous;
static atomic_uintptr_t page_mask;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fault outside every watched range: the handler that was there before,
 * else the default action (the faulting access then runs again and kills). */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
        previous.sa_sigaction(sig, si, uc);
    } else if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL &&
               previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    } else {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGBUS, &dfl, NULL);
    }
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr, mask = atomic_load(&page_mask);
    for (int i = 0; mask && i < HC_SIGBUS_SLOTS; i++) {
        uintptr_t b = atomic_load_explicit(&ranges[i].begin, memory_order_acquire);
        uintptr_t e = atomic_load_explicit(&ranges[i].end, memory_order_relaxed);
        if (b <= BUSY || a < b || a >= e) continue;
        uintptr_t page = a & mask;
        /* zeros from the faulting page to the end: past a truncation every
         * page would fault, one signal is enough */
        if (mmap((void *)page, e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0) == MAP_FAILED)
            break;
        atomic_fetch_add(&ranges[i].faults, 1);
        return;
    }
    pass_on(sig, si, uc);
}

int hc_sigbus_install(void)
{
    int rc = 0;
    pthread_mutex_lock(&install_lock);
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0) rc = -1;
    if (rc == 0 && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)) {
        long page = sysconf(_SC_PAGESIZE);
        atomic_store(&page_mask, ~(uintptr_t)((page > 0 ? page : 4096) - 1));
        previous = cur; /* before the handler can run */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        rc = sigaction(SIGBUS, &sa, NULL) == 0 ? 0 : -1;
    }
    pthread_mutex_unlock(&install_lock);
    return rc;
}

int hc_sigbus_watch(const void *addr, size_t len)
{
    if (addr == NULL || len == 0) return -1;
    for (int i = 0; i < HC_SIGBUS_SLOTS; i++) {
        uintptr_t expect = 0;
        if (!atomic_compare_exchange_strong(&ranges[i].begin, &expect, BUSY)) continue;
        atomic_store(&ranges[i].faults, 0);
        atomic_store_explicit(&ranges[i].end, (uintptr_t)addr + len, memory_order_relaxed);
        atomic_store_explicit(&ranges[i].begin, (uintptr_t)addr, memory_order_release);
        return i;
    }
    return -1;
}

unsigned hc_sigbus_faults(int slot)
{
    return slot >= 0 && slot < HC_SIGBUS_SLOTS ? atomic_load(&ranges[slot].faults) : 0;
}

void hc_sigbus_unwatch(int slot)
{
    if (slot < 0 || slot >= HC_SIGBUS_SLOTS) return;
    atomic_store_explicit(&ranges[slot].end, 0, memory_order_relaxed);
    atomic_store_explicit(&ranges[slot].begin, 0, memory_order_release);
}
