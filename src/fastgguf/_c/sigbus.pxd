# Turn a SIGBUS inside a guarded region into an error code instead of the death of the process.
#
# Reading a memory-mapped page past the end of a file that shrank after it was mapped (truncated by
# another process) raises SIGBUS. Code that reads the map between fgg_guard_enter() and
# fgg_guard_leave() on the same thread gets back to the fgg_guard_enter() with a non-zero result.
# Outside a guarded region the previous handler (Python's faulthandler, or the default: death) runs
# as before. Each extension module that cimports this has its own copy and handler, chained.
#
#     if fgg_guard_enter(&guard):     # non-zero: came back from a SIGBUS
#         fgg_guard_leave(&guard)
#         ...report the error...
#     ...read the map...
#     fgg_guard_leave(&guard)
#
# Between the enter and a SIGBUS, nothing may be left half-done that matters (locks, Python objects):
# the kernels only read the map and write their own output. Not on Windows (no SIGBUS there).

cdef extern from "sigbus.h":
    ctypedef struct fgg_guard:
        pass
    const int FGG_HAVE_SIGBUS_GUARD
    int fgg_sigbus_install() noexcept nogil
    int fgg_guard_enter(fgg_guard *guard) noexcept nogil
    void fgg_guard_leave(fgg_guard *guard) noexcept nogil
