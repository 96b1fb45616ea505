/* Pre-faulting a range of mapped input before the kernels read it (declared in kernels.pxi).
 *
 * Reading a freshly mapped file page by page costs one minor fault per 4 KiB page (tens of
 * thousands for a model): the kernel's fault handling, not the dequantization, then dominates.
 * One madvise(MADV_POPULATE_READ) (Linux 5.14+) maps the whole range in a single call;
 * elsewhere, or on older kernels, MADV_WILLNEED at least starts the reads. Advice only: the
 * result changes no data, and any failure is ignored (the kernels then fault as before). A range
 * past the end of a truncated file gives EFAULT here, never SIGBUS. */
#ifndef FGG_PREFAULT_H
#define FGG_PREFAULT_H
#include <stddef.h>
#include <stdint.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22
#endif

/* Returns 1 if the range was populated, 2 if only advised (MADV_WILLNEED), 0 if neither. */
static int fgg_prefault(const void *p, size_t n) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start, end;
    if (n == 0 || page <= 0) return 0;
    start = (uintptr_t)p & ~(uintptr_t)(page - 1);
    end = (uintptr_t)p + n;
#if defined(__linux__)
    if (madvise((void *)start, end - start, MADV_POPULATE_READ) == 0) return 1;
#endif
#if defined(MADV_WILLNEED)
    if (madvise((void *)start, end - start, MADV_WILLNEED) == 0) return 2;
#endif
    return 0;
}
#else
static int fgg_prefault(const void *p, size_t n) { (void)p; (void)n; return 0; }
#endif

#endif
