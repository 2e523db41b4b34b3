/* Integer code for the AArch64 disassembly comparison: shifted and extended register operands,
   multiply and divide, conditional select and compare, bitfields, 128-bit arithmetic, branches
   on bits and zero, and a switch that becomes a jump table. No headers, so the same file builds
   for Linux (gcc) and for a Mach-O dylib without an SDK (clang). */
typedef unsigned long u64;
typedef long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

i64 index_mix(i64 *a, int i, u32 j, short k, signed char c, u16 h, u8 b) {
    return a[i] + a[j] + a[k] + a[c] + a[h] + a[b];
}
i64 extend_add(i64 x, int w, u32 u, short s, u16 h, signed char c, u8 b) {
    return x + ((i64)w << 1) + ((u64)u << 2) + ((i64)s << 3) + ((u64)h << 4) + c + b;
}
int extend_cmp(i64 x, u32 u, int w, u16 h) {
    return (x == (i64)u) + 2 * (x < (i64)w) + 4 * ((u64)x > h) + 8 * (x - (i64)(short)w == 3);
}
u64 shifted(u64 a, u64 b, u64 c) {
    return (a + (b << 7)) ^ (c >> 3) ^ ((a - (c >> 11)) | ~(b << 2)) ^ (a & ~(c >> 5)) ^ ((i64)b >> 9);
}
u32 shifted32(u32 a, u32 b) { return (a - (b << 3)) & (b | (a >> 2)) & ~(a ^ (b << 1)); }
u64 rotate(u64 a, unsigned n) { return (a >> n) | (a << (64 - n)); }
u32 rotate32(u32 a) { return (a >> 13) | (a << 19); }
u64 extract(u64 a, u64 b) { return (a << 20) | (b >> 44); }
i64 muldiv(i64 a, i64 b, i64 c) { return a * b + c - (a / (b | 1)) * c + (a % (c | 1)); }
u64 umuldiv(u64 a, u64 b) { return a / (b | 1) + a % (b | 3) + a * b; }
i64 widen(int a, int b, u32 c, u32 d, i64 e) { return (i64)a * b + (u64)c * d - e * (i64)a; }
u64 mulhigh(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
i64 smulhigh(i64 a, i64 b) { return (i64)(((__int128)a * b) >> 64); }
unsigned __int128 add128(unsigned __int128 a, unsigned __int128 b) { return a + b; }
__int128 sub128(__int128 a, __int128 b) { return a - b; }
__int128 neg128(__int128 a) { return -a; }
int select(int a, int b, int c) { return a > b ? c : a < c ? b + 1 : a == c ? ~b : -c; }
i64 select64(i64 a, i64 b) { return a != 0 && b > 3 ? a : b; }
int condcmp(int a, int b, int c) { return (a == 5 && b < c) || (a > b && c != 17); }
int flag(long a, long b) { return a <= b; }
u32 bitfield_extract(u32 x) { return (x >> 5) & 0x3ff; }
int sbitfield(int x) { return (x << 7) >> 20; }
u64 bitfield_insert(u64 x, u64 y) { return (x & ~0xff0ul) | ((y & 0xff) << 4); }
struct bits { unsigned a : 3, b : 9, c : 20; int d : 7; };
u32 get_bits(struct bits *p) { return p->a + p->b + p->c + p->d; }
void set_bits(struct bits *p, u32 v) { p->b = v; p->d = (int)v; }
int count(u64 x) { return __builtin_clzl(x | 1) + __builtin_ctzl(x | 2) + __builtin_popcountl(x); }
int count32(u32 x) { return __builtin_clz(x | 1) + __builtin_ctz(x | 4) + __builtin_clrsb((int)x); }
u64 bswap(u64 x) { return __builtin_bswap64(x); }
u32 bswap32(u32 x) { return __builtin_bswap32(x); }
u16 bswap16(u16 x) { return __builtin_bswap16(x); }
u64 logical_imm(u64 x) { return (x & 0x00ff00ff00ff00ffu) | 0x5555555555555555u; }
u32 logical_imm32(u32 x) { return (x ^ 0xf0f0f0f0u) & 0x7ffffffeu; }
u64 big_constants(void) { return 0x123456789abcdef0ul; }
u32 negative_constants(int x) { return (u32)(x * -12345) + 0xffff0000u; }
int test_bits(u64 x, int y) {
    if (x & (1ul << 37)) return 1;
    if (!(y & 4)) return 2;
    if (y == 0) return 3;
    if (x != 0) return 4;
    return 5;
}
int jump_table(int x, int y) {
    switch (x) {
    case 0: return y + 11;
    case 1: return y * 3;
    case 2: return y - 7;
    case 3: return y ^ 99;
    case 4: return y << 3;
    case 5: return y / 5;
    case 6: return y | 0x40;
    case 7: return -y;
    default: return 0;
    }
}
int add_overflow(int a, int b, int *out) { return __builtin_add_overflow(a, b, out); }
int mul_overflow(long a, long b, long *out) { return __builtin_mul_overflow(a, b, out); }
int saturate_sub(u32 a, u32 b) { return a > b ? a - b : 0; }
i64 absdiff(i64 a, i64 b) { i64 d = a - b; return d < 0 ? -d : d; }
int recurse(int n) { return n <= 1 ? 1 : n * recurse(n - 1) + recurse(n - 2); }
int (*pick(int i))(int) { return i ? recurse : (int (*)(int))0; }
int call_pointer(int (*f)(int), int v) { return f(v) + 1; }
u64 sum_bytes(const u8 *p, long n) { u64 s = 0; while (n--) s += *p++; return s; }
