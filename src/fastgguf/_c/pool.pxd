# Declarations of pool.h: the kernels' own worker threads.
#
# fgg_pool_run(fn, ctx, n_tasks, threads) runs fn(ctx, 0) ... fn(ctx, n_tasks - 1), each once, on
# up to `threads` threads including the caller's, and returns when all have finished. Call it
# without the GIL; fn must not take it. Tasks are claimed dynamically, so which thread runs a task
# varies: a task must write only its own part of the output. Each task enters its own SIGBUS guard
# (the guard is per thread). A second call while the pool is busy, a count of 1, or a platform
# without the pool (FGG_HAVE_POOL 0: not POSIX) runs the tasks one after another on the caller.

cdef extern from "pool.h":
    ctypedef void (*fgg_task_fn)(void *ctx, int task) noexcept nogil
    const int FGG_HAVE_POOL
    void fgg_pool_run(fgg_task_fn fn, void *ctx, int n_tasks, int threads) noexcept nogil
    int fgg_pool_workers() noexcept nogil
    void fgg_pool_set_spin(long long ns) noexcept nogil
