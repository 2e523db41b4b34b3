/* Floating point and SIMD: float/double arithmetic, fused multiply-add, conversions between
   integers and floats and between widths, comparisons and selects, rounding, constants, and
   loops that the vectorizer turns into vector instructions (compiled at -O2 and -O3). */
typedef unsigned long u64;
typedef long i64;
typedef unsigned int u32;
typedef unsigned char u8;
typedef short i16;

float farith(float a, float b, float c) { return (a + b) * c - a / b + __builtin_fabsf(c) - (-b); }
double darith(double a, double b, double c) { return a * b + c - __builtin_sqrt(a) + __builtin_fma(a, b, c); }
float fminmax(float a, float b) { return __builtin_fminf(a, b) + __builtin_fmaxf(a, b); }
double dround(double a) { return __builtin_floor(a) + __builtin_ceil(a) + __builtin_trunc(a) + __builtin_round(a) + __builtin_nearbyint(a) + __builtin_rint(a); }
long convert_to_int(double a, float b) { return (long)a + (int)b + (unsigned long)a + (unsigned)b + __builtin_lround(a); }
double convert_from_int(long a, unsigned b, int c, unsigned long d) { return (double)a + (double)b + (float)c + (double)d; }
double widen_float(float a) { return a; }
float narrow_double(double a) { return (float)a; }
int fcompare(double a, double b) { return (a < b) + 2 * (a == b) + 4 * (a >= b) + 8 * __builtin_isunordered(a, b); }
double fselect(double a, double b, double c) { return a > b ? c : a < c ? b : 3.0; }
float fconstants(float a) { return a * 2.5f + 0.125f - 17.0f + 1.0e10f; }
double dconstants(double a) { return a * 0.1 + 1.0 - 31.0; }
u32 float_bits(float f) { union { float f; u32 u; } v = { f }; return v.u; }
double bits_double(u64 b) { union { u64 u; double d; } v = { b }; return v.d; }
_Float16 half_add(_Float16 a, _Float16 b) { return a + b; }
float half_to_float(_Float16 a) { return a; }

void vadd(float *restrict a, const float *restrict b, const float *restrict c, int n) { for (int i = 0; i < n; i++) a[i] = b[i] + c[i] * 3.0f; }
void vfma(double *restrict a, const double *restrict b, int n) { for (int i = 0; i < n; i++) a[i] += b[i] * a[i]; }
void vint(int *restrict a, const int *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (a[i] * b[i]) ^ (b[i] >> 3) ^ (a[i] << 2); }
long vsum(const int *a, int n) { long s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
int vmax(const int *a, int n) { int m = -2147483647; for (int i = 0; i < n; i++) m = a[i] > m ? a[i] : m; return m; }
void vbytes(u8 *restrict a, const u8 *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (u8)((a[i] + b[i] + 1) >> 1); }
void vwiden(int *restrict a, const i16 *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = b[i] * 7; }
void vnarrow(i16 *restrict a, const int *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (i16)(b[i] >> 4); }
void vconvert(float *restrict a, const int *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (float)b[i]; }
void vconvert_back(int *restrict a, const double *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (int)b[i]; }
void vselect(float *restrict a, const float *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = b[i] > 0.0f ? b[i] : -b[i] * 0.5f; }
float vdot(const float *a, const float *b, int n) { float s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
void vshuffle(int *restrict a, const int *restrict b, int n) { for (int i = 0; i < n; i += 2) { a[i] = b[i + 1]; a[i + 1] = b[i]; } }
void vabs(int *restrict a, const int *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = b[i] < 0 ? -b[i] : b[i]; }
void vminu(u32 *restrict a, const u32 *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = a[i] < b[i] ? a[i] : b[i]; }
void vlong(i64 *restrict a, const i64 *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = (a[i] + b[i]) >> 1; }
void vsqrt(double *restrict a, int n) { for (int i = 0; i < n; i++) a[i] = __builtin_sqrt(a[i]); }
typedef int v4si __attribute__((vector_size(16)));
typedef float v4sf __attribute__((vector_size(16)));
typedef unsigned char v16qi __attribute__((vector_size(16)));
typedef short v8hi __attribute__((vector_size(16)));
v4si vector_ext(v4si a, v4si b) { return (a + b) * (a - b) & ~(a >> 2); }
v4sf vector_float(v4sf a, v4sf b) { return a * b + a / b; }
v16qi vector_bytes(v16qi a, v16qi b) { return (a ^ b) | (a << 1); }
v8hi vector_cmp(v8hi a, v8hi b) { return (a > b) & (a == b + 1); }
int vector_lane(v4si a) { return a[1] + a[3]; }
v4si vector_dup(int x) { return (v4si){ x, x, x, x }; }
v4si vector_const(void) { return (v4si){ 1, 2, 3, 4 }; }
v4sf vector_shuffle(v4sf a, v4sf b) { return __builtin_shufflevector(a, b, 0, 4, 1, 5); }
int fixed_point(float a, double b) { return (int)(a * 16.0f) + (int)(b * 256.0); }
double from_fixed(int a, long b) { return a / 65536.0 + b / 16.0f; }
float fnegmul(float a, float b, float c) { return -(a * b) - c + __builtin_fabsf(a - b); }
double fcond(double a, double b, int c) { return (c > 3 && a < b) ? a : b; }
_Float16 half_from_int(int a) { return (_Float16)a; }
int half_to_int(_Float16 h) { return (int)h; }
double lanes_to_gpr(double a, long b) { union { double d; long l; } u = { a }; u.l ^= b; return u.d; }
void vpost(float *restrict a, const float *restrict b, long n) { while (n--) { *a++ = *b++ * 2.0f; } }
void vdouble_convert(double *restrict a, const float *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = b[i]; }
void vmul_high(long *restrict a, const int *restrict b, const int *restrict c, int n) { for (int i = 0; i < n; i++) a[i] = (long)b[i] * c[i]; }
