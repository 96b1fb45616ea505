/* One row of x, one thread: ggml's own vec_dot (libggml-cpu of a llama.cpp build) against
 * fastgguf's integer kernel for Q2_K to Q6_K, weights of random bytes with fp16 scales of
 * sane size. "x ggml" is ggml's time / fastgguf's within one run, so an A/B of two dot.h versions
 * (build once with each on the include path, run them in turn) compares ratios, which this shared
 * machine's noise moves less than times. The checksum (the outputs' sum) must not change.
 *
 *   L=LLAMA_CPP/build/bin
 *   gcc -O3 -ffp-contract=off -fno-strict-aliasing -mavx2 -mfma -mf16c -mbmi2 -mprefer-vector-width=128 \
 *       -I src/fastgguf/_c benchmarks/c/int_row1.c -o /tmp/int_row1 -L$L -lggml-cpu -lggml-base -Wl,-rpath,$L -lm
 *   /tmp/int_row1 q2|q3|q4|q5|q6 N K
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dot.h"
typedef void (*gdot)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc);
void ggml_vec_dot_q2_K_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_q3_K_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_q4_K_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_q5_K_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_q6_K_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void quantize_row_q8_K(const float *x, void *y, int64_t k);
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  int t = argv[1][1]-'0'; int N=atoi(argv[2]), K=atoi(argv[3]), R=15;
  static const int type_bytes[7] = {0, 0, 84, 110, 144, 176, 210}, d_at[7] = {0, 0, 80, 108, 0, 0, 208};
  static const gdot ggml_dots[7] = {0, 0, ggml_vec_dot_q2_K_q8_K, ggml_vec_dot_q3_K_q8_K, ggml_vec_dot_q4_K_q8_K,
                                    ggml_vec_dot_q5_K_q8_K, ggml_vec_dot_q6_K_q8_K};
  static void (*const ours[7])(const uint8_t*,ptrdiff_t,const fgg_mm_q8k*,ptrdiff_t,int,float*,ptrdiff_t) = {
      0, 0, fgg_mm_rows_q2_k, fgg_mm_rows_q3_k, fgg_mm_rows_q4_k, fgg_mm_rows_q5_k, fgg_mm_rows_q6_k};
  if (t < 2 || t > 6) return 2;
  int bytes = type_bytes[t]; int nsb=K/256; size_t rb=(size_t)nsb*bytes;
  gdot g = ggml_dots[t];
  void (*f)(const uint8_t*,ptrdiff_t,const fgg_mm_q8k*,ptrdiff_t,int,float*,ptrdiff_t) = ours[t];
  uint8_t*w=aligned_alloc(64,((rb*N+63)/64)*64); srand(1);
  for(size_t i=0;i<rb*N;i++) w[i]=rand();
  for(size_t b=0;b<(size_t)N*nsb;b++){ uint8_t*p=w+b*bytes+d_at[t]; p[0]=0;p[1]=0x20; if(t!=3&&t!=6){p[2]=0;p[3]=0x1c;} }
  float*x=malloc(4*K); for(int i=0;i<K;i++) x[i]=(rand()/(float)RAND_MAX-0.5f);
  void*yg=malloc(292*nsb); quantize_row_q8_K(x,yg,K);
  fgg_mm_q8k*yf=aligned_alloc(64,sizeof(fgg_mm_q8k)*nsb); fgg_mm_quantize_x8k(x,K,yf);
  float*o1=malloc(4*N),*o2=malloc(4*N); double best[2]={1e9,1e9}; double cs=0;
  for(int r=0;r<R;r++){
    double s=now(); for(int i=0;i<N;i++) g(K,o1+i,0,w+i*rb,0,yg,0,1); s=now()-s; if(s<best[0])best[0]=s;
    s=now(); for(int i=0;i<N;i++) f(w+i*rb,nsb,yf,0,1,o2+i,1); s=now()-s; if(s<best[1])best[1]=s;
  }
  for(int i=0;i<N;i++) cs += o2[i];
  printf("Q%d_K %dx%d ggml %.0f us fastgguf %.0f us x ggml %.2f checksum %.9g\n",t,N,K,best[0]*1e6,best[1]*1e6,best[0]/best[1],cs);
}
