/* SIGBUS guard for reads of memory-mapped files; declared (and documented) in sigbus.pxd. */
#ifndef FGG_SIGBUS_H
#define FGG_SIGBUS_H
#if defined(__unix__) || defined(__APPLE__)
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#define FGG_HAVE_SIGBUS_GUARD 1

typedef struct { sigjmp_buf env; void *outer; } fgg_guard;
static __thread fgg_guard *fgg_guard_current = NULL;
static struct sigaction fgg_sigbus_previous;
static int fgg_sigbus_installed = 0;

static void fgg_sigbus_handler(int sig, siginfo_t *info, void *context) {
    fgg_guard *guard = fgg_guard_current;
    if (guard != NULL) {
        fgg_guard_current = (fgg_guard *)guard->outer;
        siglongjmp(guard->env, 1);   /* SA_NODEFER: SIGBUS is not left blocked */
    }
    if (fgg_sigbus_previous.sa_flags & SA_SIGINFO) {
        if (fgg_sigbus_previous.sa_sigaction != NULL) {
            fgg_sigbus_previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (fgg_sigbus_previous.sa_handler != SIG_DFL && fgg_sigbus_previous.sa_handler != SIG_IGN) {
        fgg_sigbus_previous.sa_handler(sig);
        return;
    }
    /* Nobody else wants it: the default action, when the faulting access runs again. */
    signal(SIGBUS, SIG_DFL);
}

static int fgg_sigbus_install(void) {
    struct sigaction action;
    if (fgg_sigbus_installed)
        return 0;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = fgg_sigbus_handler;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &fgg_sigbus_previous) != 0)
        return -1;
    fgg_sigbus_installed = 1;
    return 0;
}

/* A macro: sigsetjmp must run in the frame that stays alive while the guard is on. */
#define fgg_guard_enter(guard) \
    ((guard)->outer = (void *)fgg_guard_current, \
     sigsetjmp((guard)->env, 0) ? 1 : (fgg_guard_current = (guard), 0))
static inline void fgg_guard_leave(fgg_guard *guard) {
    if (fgg_guard_current == guard)
        fgg_guard_current = (fgg_guard *)guard->outer;
}
#else
#define FGG_HAVE_SIGBUS_GUARD 0
typedef struct { int unused; } fgg_guard;
static int fgg_sigbus_install(void) { return 0; }
#define fgg_guard_enter(guard) 0
static inline void fgg_guard_leave(fgg_guard *guard) { (void)guard; }
#endif

#endif
