/* Which kernel builds this CPU can run (declared in kernels.pxi, used through cpu_supports()). */
#ifndef FGG_CPU_H
#define FGG_CPU_H
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#define FGG_CPU(feature) __builtin_cpu_supports(feature)
#define FGG_CPU_INIT() __builtin_cpu_init()
/* clang before 16 has no "f16c" for __builtin_cpu_supports: ask cpuid (leaf 1, ECX bit 29). */
static int fgg_cpu_has_f16c(void) {
    unsigned int a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1u);
}
#else
#define FGG_CPU(feature) 0
#define FGG_CPU_INIT() ((void)0)
static int fgg_cpu_has_f16c(void) { return 0; }
#endif
static int fgg_cpu_has_avx2(void) {
    FGG_CPU_INIT();
    return FGG_CPU("avx2") && FGG_CPU("fma") && fgg_cpu_has_f16c() && FGG_CPU("bmi2");
}
static int fgg_cpu_has_avx512(void) {
    FGG_CPU_INIT();
    return fgg_cpu_has_avx2() && FGG_CPU("avx512f") && FGG_CPU("avx512bw")
        && FGG_CPU("avx512vl") && FGG_CPU("avx512dq");
}
#endif
/* AVX-512 VNNI (vpdpbusd on zmm): cpuid leaf 7, subleaf 0, ECX bit 11, on top of the avx512
 * build's features (whose checks include the OS saving the zmm state). */
#ifndef FGG_CPU_VNNI_H
#define FGG_CPU_VNNI_H
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
static int fgg_cpu_has_avx512_vnni(void) {
    unsigned int a, b, c, d;
    return fgg_cpu_has_avx512() && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((c >> 11) & 1u);
}
#else
static int fgg_cpu_has_avx512_vnni(void) { return 0; }
#endif
#endif
/* Whether the CPU runs a 512-bit vector operation whole (Intel's AVX-512 cores, AMD Zen 5) rather
 * than as two 256-bit halves (AMD Zen 4, cpuid family 0x19, the only AVX-512 CPUs that split them):
 * there the kernels that pack two weight rows into one 512-bit vector cost more than the 256-bit
 * ones they replace. Not a cpuid feature bit: the vendor and family tell it. */
#ifndef FGG_CPU_WIDTH_H
#define FGG_CPU_WIDTH_H
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
static int fgg_cpu_avx512_full_width(void) {
    unsigned int a, b, c, d, family;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u)  /* "Auth" of "AuthenticAMD" */
        return 1;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 1;
    family = (a >> 8) & 0xfu;
    if (family == 0xfu)
        family += (a >> 20) & 0xffu;
    return family != 0x19u;
}
#else
static int fgg_cpu_avx512_full_width(void) { return 1; }
#endif
#endif
