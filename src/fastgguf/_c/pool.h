/* A pool of worker threads for the kernels' splits of one call; declared (and documented) in pool.pxd.
 *
 * Python's ThreadPoolExecutor costs 100-150 us per hand-off on a shared VM: as much as a whole
 * matrix-vector product of a 2048x2048 Q4_K weight. Here a call publishes (fn, ctx, n_tasks) and
 * bumps a generation counter; workers that finished a job recently are still spinning on that
 * counter (fgg_pool_spin_ns) and start at once, the others sleep on a condition variable. Tasks
 * are claimed from a shared counter, so the caller takes them all if the workers are late.
 */
#ifndef FGG_POOL_H
#define FGG_POOL_H
#include <stddef.h>

typedef void (*fgg_task_fn)(void *ctx, int task);

#if (defined(__unix__) || defined(__APPLE__)) && (defined(__GNUC__) || defined(__clang__))
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#define FGG_HAVE_POOL 1
#define FGG_POOL_MAX_WORKERS 255
/* How long an idle worker spins before it sleeps: 0.2 ms covers Python's overhead between two
   kernel calls (fgg_pool_set_spin changes it). */
static long long fgg_pool_spin_ns = 200000;

#if defined(__x86_64__) || defined(__i386__)
#define fgg_pool_pause() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define fgg_pool_pause() __asm__ __volatile__("yield")
#else
#define fgg_pool_pause() ((void)0)
#endif

/* state: the job's generation (high 32 bits), CLOSED, and how many workers are inside the job (low
   31 bits). A worker enters with a compare-and-swap that fails once the caller closed the job, so
   the caller, which waits for the count to drop to 0, knows nobody reads its job after it returns. */
#define FGG_POOL_CLOSED 0x80000000ULL
#define FGG_POOL_USERS 0x7fffffffULL

typedef struct {
    pthread_mutex_t run_lock;     /* one call at a time; a second caller runs its tasks itself */
    pthread_mutex_t lock;         /* guards the sleeps below */
    pthread_cond_t wake, done;
    unsigned long long state;
    fgg_task_fn fn;
    void *ctx;
    int n_tasks;
    int next_task;                /* claimed with fetch-add */
    int remaining;                /* tasks not finished yet */
    int n_workers;
    pid_t pid;                    /* a fork leaves the threads behind: start again in the child */
} fgg_pool_state;

static fgg_pool_state fgg_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                  PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static long long fgg_pool_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static unsigned fgg_pool_generation(void) {
    return (unsigned)(__atomic_load_n(&fgg_pool.state, __ATOMIC_ACQUIRE) >> 32);
}

/* Claim and run tasks of the current job until none is left. */
static void fgg_pool_work(void) {
    for (;;) {
        int task = __atomic_fetch_add(&fgg_pool.next_task, 1, __ATOMIC_ACQ_REL);
        if (task >= fgg_pool.n_tasks)
            return;
        fgg_pool.fn(fgg_pool.ctx, task);
        if (__atomic_sub_fetch(&fgg_pool.remaining, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&fgg_pool.lock);
            pthread_cond_broadcast(&fgg_pool.done);
            pthread_mutex_unlock(&fgg_pool.lock);
        }
    }
}

static void *fgg_pool_worker(void *unused) {
    unsigned seen = fgg_pool_generation();
    (void)unused;
    for (;;) {
        long long spin_end = fgg_pool_now_ns() + __atomic_load_n(&fgg_pool_spin_ns, __ATOMIC_RELAXED);
        unsigned long long state;
        int spins = 0;
        while ((unsigned)((state = __atomic_load_n(&fgg_pool.state, __ATOMIC_ACQUIRE)) >> 32) == seen) {
            fgg_pool_pause();
            if (++spins % 64 == 0 && fgg_pool_now_ns() > spin_end) {
                pthread_mutex_lock(&fgg_pool.lock);
                while ((unsigned)((state = __atomic_load_n(&fgg_pool.state, __ATOMIC_ACQUIRE)) >> 32) == seen)
                    pthread_cond_wait(&fgg_pool.wake, &fgg_pool.lock);
                pthread_mutex_unlock(&fgg_pool.lock);
                break;
            }
        }
        seen = (unsigned)(state >> 32);
        while (!(state & FGG_POOL_CLOSED) && (unsigned)(state >> 32) == seen) {
            if (__atomic_compare_exchange_n(&fgg_pool.state, &state, state + 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                fgg_pool_work();
                __atomic_sub_fetch(&fgg_pool.state, 1, __ATOMIC_ACQ_REL);
                break;
            }
        }
    }
    return NULL;
}

/* Start workers until there are n (called under run_lock). Returns how many there are. */
static int fgg_pool_grow(int n) {
    pid_t pid = getpid();
    if (fgg_pool.pid != pid) {
        /* First use, or the child of a fork: the parent's workers do not exist here. */
        fgg_pool.pid = pid;
        fgg_pool.n_workers = 0;
        pthread_mutex_init(&fgg_pool.lock, NULL);
        pthread_cond_init(&fgg_pool.wake, NULL);
        pthread_cond_init(&fgg_pool.done, NULL);
    }
    if (n > FGG_POOL_MAX_WORKERS)
        n = FGG_POOL_MAX_WORKERS;
    while (fgg_pool.n_workers < n) {
        pthread_t thread;
        pthread_attr_t attr;
        int failed;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        failed = pthread_create(&thread, &attr, fgg_pool_worker, NULL);
        pthread_attr_destroy(&attr);
        if (failed)
            break;
        fgg_pool.n_workers++;
    }
    return fgg_pool.n_workers;
}

/* Run fn(ctx, 0) ... fn(ctx, n_tasks - 1) on up to `threads` threads (this one included) and
   return when all have finished. Each task runs exactly once, on one thread. */
static void fgg_pool_run(fgg_task_fn fn, void *ctx, int n_tasks, int threads) {
    unsigned long long generation;
    int i;
    if (n_tasks <= 0)
        return;
    if (threads > n_tasks)
        threads = n_tasks;
    if (threads <= 1 || pthread_mutex_trylock(&fgg_pool.run_lock) != 0) {
        for (i = 0; i < n_tasks; i++)   /* one thread, or the pool is busy with another call */
            fn(ctx, i);
        return;
    }
    if (fgg_pool_grow(threads - 1) == 0) {
        pthread_mutex_unlock(&fgg_pool.run_lock);
        for (i = 0; i < n_tasks; i++)
            fn(ctx, i);
        return;
    }
    /* The previous job is closed with no worker inside: nobody reads these fields now. */
    fgg_pool.fn = fn;
    fgg_pool.ctx = ctx;
    fgg_pool.n_tasks = n_tasks;
    fgg_pool.next_task = 0;
    fgg_pool.remaining = n_tasks;
    generation = (__atomic_load_n(&fgg_pool.state, __ATOMIC_RELAXED) >> 32) + 1;
    pthread_mutex_lock(&fgg_pool.lock);
    __atomic_store_n(&fgg_pool.state, (generation & 0xffffffffULL) << 32, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&fgg_pool.wake);
    pthread_mutex_unlock(&fgg_pool.lock);
    fgg_pool_work();
    for (i = 0; __atomic_load_n(&fgg_pool.remaining, __ATOMIC_ACQUIRE) != 0; i++) {
        fgg_pool_pause();
        if (i > 4096) {
            pthread_mutex_lock(&fgg_pool.lock);
            while (__atomic_load_n(&fgg_pool.remaining, __ATOMIC_ACQUIRE) != 0)
                pthread_cond_wait(&fgg_pool.done, &fgg_pool.lock);
            pthread_mutex_unlock(&fgg_pool.lock);
            break;
        }
    }
    /* Close the job, then wait out the workers still inside it (they find no task left). */
    __atomic_fetch_or(&fgg_pool.state, FGG_POOL_CLOSED, __ATOMIC_ACQ_REL);
    for (i = 0; __atomic_load_n(&fgg_pool.state, __ATOMIC_ACQUIRE) & FGG_POOL_USERS; i++) {
        fgg_pool_pause();
        if (i > 4096)
            sched_yield();   /* a worker inside was preempted */
    }
    pthread_mutex_unlock(&fgg_pool.run_lock);
}

static void fgg_pool_set_spin(long long ns) {
    __atomic_store_n(&fgg_pool_spin_ns, ns < 0 ? 0 : ns, __ATOMIC_RELAXED);
}

/* Workers started in this process so far. */
static int fgg_pool_workers(void) {
    return fgg_pool.pid == getpid() ? fgg_pool.n_workers : 0;
}

#else
#define FGG_HAVE_POOL 0
static int fgg_pool_workers(void) { return 0; }
static void fgg_pool_set_spin(long long ns) { (void)ns; }
static void fgg_pool_run(fgg_task_fn fn, void *ctx, int n_tasks, int threads) {
    int i;
    (void)threads;
    for (i = 0; i < n_tasks; i++)
        fn(ctx, i);
}
#endif

#endif
