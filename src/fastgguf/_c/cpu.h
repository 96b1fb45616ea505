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
