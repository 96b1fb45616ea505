"""Run fastgguf's AVX-512 kernel build on a machine without AVX-512: under Bochs, an emulated CPU.

The avx512 build (and its VNNI integer kernels) is chosen at run time on CPUs that have AVX-512;
on a machine without it the build is never imported, so its code would otherwise never run here.
This tool boots a Linux kernel in Bochs (Debian's ``bochs``, a CPU emulator with AVX-512 CPU
models) with a small initramfs holding this Python, numpy and this checkout's built fastgguf, and
runs ``tools/cpu_builds_agree.py`` there: every build the emulated CPU can run (portable, avx2,
avx512; avx512 with VNNI too on a CPU model that has it) must give the same bytes for dequantize,
quantize and matmul. The default model, ``corei7_icelake_u``, has AVX-512 VNNI, so the VNNI
integer kernels run as well; it boots only with a few of its features turned off on the kernel's
command line (``_KERNEL_ARGS``). ``corei7_skylake_x`` has AVX-512 F, BW, VL and DQ, no VNNI.

It checks correctness, not speed: Bochs interprets every instruction (tens of millions a second
here), so booting takes minutes and each type's checks several seconds.

Needs (Debian): ``apt-get install bochs bochsbios bochs-term busybox-static xorriso isolinux
syslinux-common cpio linux-source-6.1 flex bison bc libelf-dev libssl-dev``. The tool builds a
small kernel from that source (about 4 minutes on 2 cores) with one check relaxed: Bochs' CPUID
gives an XSAVE area size larger than the sum of its components, which the kernel's paranoid check
rejects by turning XSAVE, and with it AVX, off. The in-place build of fastgguf must exist
(``python setup.py build_ext --inplace``).

The check runs with one thread (``--threads 1``): this Bochs loses the AVX-512 registers when the
guest switches threads, which ``--register-check`` shows (it runs a small static program that fills
zmm0-31 in two threads and compares, instead of the check).

    python tools/emulate_avx512.py [--types Q4_K,Q6_K] [--show] [--check-args='--rows 4 --trace']
    python tools/emulate_avx512.py --register-check
"""

from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
CHECK = REPO / "tools" / "cpu_builds_agree.py"
START, END = "FASTGGUF-EMULATED-START", "FASTGGUF-EMULATED-END"

# What the guest's check loads, listed by running it here first: modules and mapped libraries.
_COLLECT = r"""
import os, runpy, sys
sys.argv = [sys.argv[1], "--types", "Q4_K", "--rows", "1", "--cols", "256"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
import fastgguf, numpy
files = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f:
        files.add(os.path.realpath(f))
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split()
        if len(parts) >= 6 and parts[5].startswith("/"):
            files.add(os.path.realpath(parts[5]))
for d in (os.path.dirname(fastgguf.__file__), os.path.dirname(numpy.__file__),
          os.path.dirname(numpy.__file__) + ".libs", os.path.dirname(os.__file__) + "/encodings"):
    files.add(os.path.realpath(d))
files.add(os.path.realpath(sys.executable))
print("\n".join(sorted(files)))
"""

_INIT = """#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
export PYTHONPATH={pythonpath} PYTHONDONTWRITEBYTECODE=1 HOME=/
echo {start}
grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\\n' | grep -E '^avx512(f|bw|vl|dq|_vnni)$' | tr '\\n' ' '; echo
{command}
echo "exit status $?"
echo {end}
poweroff -f
"""

_BOCHSRC = """megs: 1536
cpu: model={model}, count=1, ips=50000000
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
ata0-master: type=cdrom, path={iso}, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev={serial}
display_library: term
log: {log}
panic: action=fatal
clock: sync=none
"""


#: --register-check: threads that each fill zmm0-31 with their own values, yield the CPU (a context
#: switch to the other thread) and spin, then compare; prints REGISTERS KEPT or REGISTERS LOST.
#: Bochs 2.7's corei7_icelake_u under Linux 6.1 loses them with 2 threads (kept with 1).
_REGISTER_CHECK_C = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static void *run(void *arg)
{
    uint32_t seed = (uint32_t)(uintptr_t)arg, pat[32 * 16] __attribute__((aligned(64))), out[32 * 16] __attribute__((aligned(64)));
    for (int i = 0; i < 32 * 16; i++) pat[i] = seed * 2654435761u + (uint32_t)i * 40503u + 1;
#define L(n) "vmovdqu32 " #n "*64(%0), %%zmm" #n "\n\t"
#define S(n) "vmovdqu32 %%zmm" #n ", " #n "*64(%1)\n\t"
    __asm__ volatile(L(0) L(1) L(2) L(3) L(4) L(5) L(6) L(7) L(8) L(9) L(10) L(11) L(12) L(13) L(14) L(15)
                     L(16) L(17) L(18) L(19) L(20) L(21) L(22) L(23) L(24) L(25) L(26) L(27) L(28) L(29) L(30) L(31)
                     "mov $200, %%r8\n\t"
                     "1: mov $24, %%eax\n\t"  /* sched_yield */
                     "syscall\n\t"
                     "mov $20000, %%rcx\n\t"
                     "2: dec %%rcx\n\t"
                     "jnz 2b\n\t"
                     "dec %%r8\n\t"
                     "jnz 1b\n\t"
                     S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
                     S(16) S(17) S(18) S(19) S(20) S(21) S(22) S(23) S(24) S(25) S(26) S(27) S(28) S(29) S(30) S(31)
                     : : "r"(pat), "r"(out)
                     : "rax", "rcx", "r11", "r8", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",
                       "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",
                       "xmm28", "xmm29", "xmm30", "xmm31");
    uint32_t lost = 0;
    for (int r = 0; r < 32; r++)
        for (int k = 0; k < 16; k++)
            if (pat[16 * r + k] != out[16 * r + k]) lost |= 1u << r;
    return (void *)(uintptr_t)lost;
}

int main(void)
{
    int bad = 0;
    for (int threads = 1; threads <= 2; threads++) {
        pthread_t t[2];
        for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, run, (void *)(uintptr_t)(i + 1));
        for (int i = 0; i < threads; i++) {
            void *lost;
            pthread_join(t[i], &lost);
            printf("%d thread(s), thread %d: zmm registers changed: 0x%08x\n", threads, i, (unsigned)(uintptr_t)lost);
            bad |= lost != NULL;
        }
    }
    puts(bad ? "REGISTERS LOST" : "REGISTERS KEPT");
    return bad;
}
"""


def build_register_check(exe: pathlib.Path) -> subprocess.CompletedProcess:
    """_REGISTER_CHECK_C compiled by gcc to a static executable at ``exe``; the run, not checked."""
    return subprocess.run(["gcc", "-O1", "-mavx512f", "-static", "-pthread", "-o", str(exe), "-x", "c", "-"],
                          input=_REGISTER_CHECK_C, text=True, capture_output=True)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


# A small kernel is built from Debian's linux-source: its generic kernel takes many minutes to boot
# under Bochs, and it turns XSAVE (so AVX and AVX-512) off on Bochs' CPU models, whose CPUID gives an
# XSAVE area size (a valid, larger one) other than the sum the kernel's paranoid check computes.
_KERNEL_CONFIG = """
CONFIG_64BIT=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_PRINTK=y
CONFIG_PRINTK_TIME=y
CONFIG_TTY=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_BINFMT_ELF=y
CONFIG_BINFMT_SCRIPT=y
CONFIG_PROC_FS=y
CONFIG_SYSFS=y
CONFIG_DEVTMPFS=y
CONFIG_FUTEX=y
CONFIG_SHMEM=y
CONFIG_TMPFS=y
CONFIG_EPOLL=y
CONFIG_EVENTFD=y
CONFIG_SIGNALFD=y
CONFIG_TIMERFD=y
CONFIG_POSIX_TIMERS=y
CONFIG_MULTIUSER=y
CONFIG_FILE_LOCKING=y
CONFIG_HIGH_RES_TIMERS=y
CONFIG_SMP=y
CONFIG_NR_CPUS=2
"""
# Features of Bochs' Ice Lake model (corei7_icelake_u) that stop this kernel early in its boot (after
# "Mountpoint-cache hash table entries"), turned off by number (32 * word + bit of
# arch/x86/include/asm/cpufeatures.h): 152 the TSC-deadline timer, 515
# and 516 protection keys (Bochs gives their XSAVE state a size of 0), 528 5-level paging, 580
# FSRM; with no5lvl, a fixed delay-loop calibration (lpj) and a TSC taken as reliable. With these
# the model boots (the whole set tried at once; which of them it needs was not narrowed down) and
# its CPU has AVX-512 VNNI. Not tried with these: the tigerlake and corei7_skylake_x models.
_KERNEL_ARGS = "clearcpuid=152,515,516,528,580 no5lvl lpj=1000000 tsc=reliable"
_XSTATE_CHECK = ("\treturn size == kernel_size;", "\treturn size <= kernel_size;")


def _kernel(work: pathlib.Path, given: str | None) -> pathlib.Path:
    if given:
        return pathlib.Path(given)
    tarballs = sorted(glob.glob("/usr/src/linux-source-*.tar.xz"))
    if not tarballs:
        sys.exit("no kernel source: apt-get install linux-source-6.1 flex bison bc libelf-dev libssl-dev "
                 "(or pass --kernel)")
    print(f"building a small kernel from {tarballs[-1]} (a few minutes)", flush=True)
    _run(["tar", "xJf", tarballs[-1], "-C", str(work)])
    src = next(p for p in work.iterdir() if p.name.startswith("linux-source-"))
    xstate = src / "arch" / "x86" / "kernel" / "fpu" / "xstate.c"
    text = xstate.read_text()
    if _XSTATE_CHECK[0] not in text:
        sys.exit(f"{xstate}: the XSAVE size check is not the one this tool knows how to relax")
    xstate.write_text(text.replace(*_XSTATE_CHECK))
    _run(["make", "tinyconfig"], cwd=src, capture_output=True)
    with open(src / ".config", "a") as config:
        config.write(_KERNEL_CONFIG)
    _run(["make", "olddefconfig"], cwd=src, capture_output=True)
    _run(["make", f"-j{os.cpu_count() or 1}", "bzImage"], cwd=src, capture_output=True)
    return src / "arch" / "x86" / "boot" / "bzImage"


def _initramfs(work: pathlib.Path, args: list[str], register_check: bool = False) -> pathlib.Path:
    root = work / "root"
    listing = [] if register_check else _run(  # the register check is static: no Python to pack
        [sys.executable, "-c", _COLLECT, str(CHECK)], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[1:]))).stdout.splitlines()
    listing = [f for f in listing if f.startswith("/") and os.path.exists(f)]
    for f in listing:
        dst = root / f.lstrip("/")
        if os.path.isdir(f):
            shutil.copytree(f, dst, dirs_exist_ok=True, symlinks=False,
                            ignore=shutil.ignore_patterns("__pycache__", "tests", "*.c", "*.pyx", "*.pxd"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)
    # the libraries' sonames (symlinks beside the mapped files), merged /usr's links and ld.so's cache
    for f in listing:
        if ".so" in os.path.basename(f) and os.path.isfile(f):
            folder = os.path.dirname(f)
            for name in os.listdir(folder):
                link = os.path.join(folder, name)
                if os.path.islink(link) and os.path.realpath(link) == f and not (root / link.lstrip("/")).exists():
                    (root / link.lstrip("/")).symlink_to(os.path.basename(f))
    for top in ("lib", "lib64"):
        if os.path.islink("/" + top) and not os.path.lexists(root / top):
            (root / os.path.realpath("/" + top).lstrip("/")).mkdir(parents=True, exist_ok=True)
            (root / top).symlink_to(os.readlink("/" + top))
    (root / "etc").mkdir(exist_ok=True)
    if os.path.exists("/etc/ld.so.cache"):
        shutil.copy2("/etc/ld.so.cache", root / "etc" / "ld.so.cache")
    (root / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(shutil.which("busybox") or "/bin/busybox", root / "bin" / "busybox")
    for tool in ("sh", "mount", "echo", "grep", "tr", "poweroff"):
        (root / "bin" / tool).symlink_to("busybox")
    for d in ("proc", "sys", "dev", "tmp"):
        (root / d).mkdir(exist_ok=True)
    # the loader at the path the binaries name (the libraries keep their absolute paths)
    loader = root / os.path.realpath("/lib64").lstrip("/") / "ld-linux-x86-64.so.2"
    loader.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(os.path.realpath("/lib64/ld-linux-x86-64.so.2"), loader)
    shutil.copy2(CHECK, root / "check.py")
    python = os.path.realpath(sys.executable)
    pythonpath = ":".join(p for p in sys.path[1:] if p and os.path.isdir(p))
    init = root / "init"
    command = f"{python} /check.py {' '.join(args)}"
    if register_check:
        built = build_register_check(root / "register_check")
        if built.returncode != 0:
            sys.exit(f"gcc could not build the register check:\n{built.stderr}")
        command = "/register_check"
    init.write_text(_INIT.format(pythonpath=pythonpath, command=command, start=START, end=END))
    init.chmod(0o755)
    image = work / "iso" / "isolinux" / "initrd.gz"
    image.parent.mkdir(parents=True, exist_ok=True)
    with open(image, "wb") as out:
        find = subprocess.Popen(["find", "."], cwd=root, stdout=subprocess.PIPE)
        cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, stdin=find.stdout,
                                stdout=subprocess.PIPE)
        _run(["gzip", "-1"], stdin=cpio.stdout, stdout=out)
        cpio.wait()
        find.wait()
    return image


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", default="", help="passed to cpu_builds_agree.py (default: every type)")
    parser.add_argument("--show", action="store_true", help="passed to cpu_builds_agree.py")
    parser.add_argument("--check-args", default="", help="more arguments for cpu_builds_agree.py, as one string: --check-args='--rows 4 --trace'")
    parser.add_argument("--cpu-model", default="corei7_icelake_u",
                        help="Bochs CPU model (corei7_icelake_u: AVX-512 F, BW, VL, DQ and VNNI; "
                             "corei7_skylake_x: no VNNI)")
    parser.add_argument("--kernel", help="a bzImage to boot instead of building one (it must keep XSAVE on)")
    parser.add_argument("--timeout", type=float, default=5400, help="seconds before the emulator is stopped")
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--register-check", action="store_true",
                        help="instead of the builds' check, whether the emulated CPU keeps zmm0-31 across "
                             "context switches (_REGISTER_CHECK_C)")
    args = parser.parse_args(argv)
    for tool in ("bochs", "xorriso", "cpio", "script"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install bochs bochsbios bochs-term busybox-static xorriso "
                     "isolinux syslinux-common cpio")
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="fastgguf-bochs-"))
    work.mkdir(parents=True, exist_ok=True)
    # one thread: this Bochs loses the AVX-512 registers' state when it switches between threads
    # (--register-check), and the avx512 build keeps pointers in zmm16-31 too (a run with 2
    # threads once faulted on such a pointer); the threads' own code is the same in every build
    check_args = (["--threads", "1"] + (["--types", args.types] if args.types else [])
                  + (["--show"] if args.show else []) + args.check_args.split())
    kernel = _kernel(work, args.kernel)
    _initramfs(work, check_args, args.register_check)
    iso_dir = work / "iso" / "isolinux"
    shutil.copy2(kernel, iso_dir / "vmlinuz")
    for f in ("/usr/lib/ISOLINUX/isolinux.bin", "/usr/lib/syslinux/modules/bios/ldlinux.c32"):
        shutil.copy2(f, iso_dir)
    (iso_dir / "isolinux.cfg").write_text(
        "DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nLABEL linux\n  KERNEL vmlinuz\n"
        f"  APPEND initrd=initrd.gz console=ttyS0,115200 rdinit=/init nokaslr {_KERNEL_ARGS}\n")
    iso = work / "boot.iso"
    _run(["xorriso", "-as", "mkisofs", "-quiet", "-o", str(iso), "-b", "isolinux/isolinux.bin", "-c",
          "isolinux/boot.cat", "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", str(work / "iso")])
    serial = work / "serial.txt"
    serial.unlink(missing_ok=True)
    (work / "bochsrc").write_text(_BOCHSRC.format(model=args.cpu_model, iso=iso, serial=serial, log=work / "bochs.log"))
    (work / "debugger.rc").write_text("c\nquit\n")  # Debian's bochs stops in its debugger at t=0
    print(f"booting {kernel.name} in Bochs ({args.cpu_model}); serial console: {serial}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(["script", "-qfc", f"bochs -q -f {work / 'bochsrc'} -rc {work / 'debugger.rc'}", "/dev/null"],
                            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        while proc.poll() is None and time.monotonic() - start < args.timeout:
            time.sleep(5)
            if serial.exists() and END in serial.read_text(errors="replace"):
                break
    finally:
        if proc.poll() is None:
            proc.terminate()
            time.sleep(2)
            subprocess.run(["pkill", "-f", str(work / "bochsrc")], check=False)
    text = serial.read_text(errors="replace") if serial.exists() else ""
    print(f"emulator ran {time.monotonic() - start:.0f} s")
    if START not in text:
        print(text[-3000:])
        print("the guest did not reach its check (see the serial console above)")
        return 2
    guest = text.split(START, 1)[1].split(END, 1)[0]
    print(guest.strip())
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if args.register_check:
        return 0 if "REGISTERS KEPT" in guest else 1
    builds = next((line.split("; builds: ", 1)[1] for line in guest.splitlines() if "; builds: " in line), "")
    return 0 if "CPU BUILDS AGREE" in guest and "avx512" in builds.split(", ") else 1


if __name__ == "__main__":
    sys.exit(main())
