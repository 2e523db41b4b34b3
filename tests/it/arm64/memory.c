/* Loads and stores in every addressing mode compilers use: immediate offsets (scaled and
   unscaled), pre- and post-index, register offsets with lsl/uxtw/sxtw, pairs, sign-extending
   loads, stack frames with locals, globals reached through adrp, and memory copies. */
typedef unsigned long u64;
typedef long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

struct rec { u8 a; u16 b; u32 c; u64 d; i64 e[4]; float f; double g; };
struct rec global_rec;
i64 global_table[64];
const char *const names[] = { "alpha", "beta", "gamma", "delta" };
static volatile int counter;

u64 fields(struct rec *r) { return r->a + r->b + r->c + r->d + r->e[3] + (u64)r->f + (u64)r->g; }
void store_fields(struct rec *r, u64 v) { r->a = v; r->b = v; r->c = v; r->d = v; r->e[1] = v; r->f = v; r->g = v; }
i64 signed_loads(signed char *a, short *b, int *c, long i) { return a[i] + b[i] + c[i] + a[-3] + b[-5] + c[-7]; }
u64 unsigned_loads(u8 *a, u16 *b, u32 *c, u32 i) { return a[i] + b[i] + c[i] + a[1] + b[300] + c[4000]; }
void reg_stores(u8 *a, u16 *b, u32 *c, u64 *d, int i, u64 v) { a[i] = v; b[i] = v; c[i] = v; d[i] = v; }
void copy_post(u64 *dst, const u64 *src, long n) { while (n--) *dst++ = *src++; }
void copy_pre(u32 *dst, const u32 *src, long n) { while (n--) *++dst = *++src; }
i64 pairs(i64 *p) { return p[0] * p[1] + p[2] * p[3] + p[-2] * p[-1]; }
void store_pairs(i64 *p, i64 a, i64 b) { p[0] = a; p[1] = b; p[6] = b; p[7] = a; p[-4] = a; p[-3] = b; }
struct big { u64 w[9]; };
struct big copy_big(struct big *b) { struct big c = *b; c.w[3]++; return c; }
void zero(struct rec *r) { *r = (struct rec){ 0 }; }
i64 global_access(int i) { global_table[i & 63] += global_rec.d; counter++; return global_table[(i + 1) & 63]; }
const char *name_of(unsigned i) { return names[i & 3]; }
i64 locals(int n) {
    volatile i64 buf[40];
    for (int i = 0; i < 40; i++) buf[i] = i * n;
    return buf[n & 31] + buf[3];
}
extern i64 external_call(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64);
i64 many_args(i64 a) { return external_call(a, a + 1, a + 2, a + 3, a + 4, a + 5, a + 6, a + 7, a + 8, a + 9) + 1; }
i64 variadic_sum(int n, ...) {
    __builtin_va_list ap;
    __builtin_va_start(ap, n);
    i64 s = 0;
    for (int i = 0; i < n; i++) s += __builtin_va_arg(ap, i64);
    __builtin_va_end(ap);
    return s;
}
i64 dynamic_stack(int n) { volatile char *p = __builtin_alloca(n + 16); p[n] = 1; return p[n / 2]; }
void prefetch(const char *p) { __builtin_prefetch(p, 0, 3); __builtin_prefetch(p + 64, 1, 0); }
