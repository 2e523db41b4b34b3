/* The re-execution benchmark's functions (benches/reexec.rs): small functions of known
 * behaviour. Each is compiled at -O0 and -O2 for x86-64 and AArch64, rea's pseudo-code of it is
 * compiled again and run against the original on the same random inputs.
 *
 * Every function is declared on one line starting with `FN`; the bench reads those lines to
 * build the inputs. Parameter types the bench knows: `int`, `unsigned`, `long`, `int n` (a length
 * 0..16 for the buffer before it), `int *` / `const int *` (16 ints), `const char *` / `char *`
 * (a NUL-terminated string in 32 bytes), `struct pt *`, `struct acc *`. Inputs stay in
 * [-30000, 30000], so no function here overflows a signed type. */
#include <stddef.h>

#define FN __attribute__((noinline))

struct pt { int x; int y; };
struct acc { long sum; int count; int max; };

/* Integer arithmetic. */
FN int add3(int a, int b, int c) { return a + b + c; }
FN int mul_add(int a, int b) { return a * 3 + b * 5 - 7; }
FN long widen_mul(int a, int b) { return (long)a * (long)b; }
FN int div_trunc(int a, int b) { if (b == 0) return 0; return a / b; }
FN int mod_signed(int a, int b) { if (b == 0) return -1; return a % b; }
FN int avg2(int a, int b) { return (a + b) / 2; }
FN unsigned rotl5(unsigned x) { return (x << 5) | (x >> 27); }
FN unsigned mix_bits(unsigned x) { x ^= x >> 7; x *= 0x9e3779b1u; return x ^ (x >> 13); }
FN int popcount_loop(unsigned x) { int n = 0; while (x) { n += x & 1; x >>= 1; } return n; }
FN long poly(long x) { return 3 * x * x - 2 * x + 11; }
FN int clamp(int x, int lo, int hi) { if (lo > hi) return lo; if (x < lo) return lo; if (x > hi) return hi; return x; }
FN int gcd(int a, int b) { if (a < 0) a = -a; if (b < 0) b = -b; while (b) { int t = a % b; a = b; b = t; } return a; }

/* Signedness. */
FN int classify(int x) { if (x < 0) return -1; if (x == 0) return 0; return 1; }
FN int sign_of_diff(int a, int b) { return (a > b) - (a < b); }
FN int abs_val(int x) { return x < 0 ? -x : x; }
FN int shr_signed(int x) { return x >> 3; }
FN unsigned shr_unsigned(unsigned x) { return x >> 3; }
FN int is_negative_long(long x) { return x < 0; }
FN long sext_byte(int x) { return (long)(signed char)x; }
FN unsigned zext_byte(int x) { return (unsigned)(unsigned char)x; }
FN int below_unsigned(unsigned a, unsigned b) { return a < b ? 7 : -7; }
FN int max3(int a, int b, int c) { int m = a; if (b > m) m = b; if (c > m) m = c; return m; }

/* Loops. */
FN int sum_to(int n) { int s = 0; for (int i = 0; i < n && i < 1000; i++) s += i; return s; }
FN long sum_squares(int n) { long s = 0; for (int i = 1; i <= n && i <= 500; i++) s += (long)i * i; return s; }
FN int collatz_steps(int n) { if (n <= 0) return -1; int s = 0; long v = n; while (v != 1 && s < 500) { v = (v & 1) ? 3 * v + 1 : v / 2; s++; } return s; }
FN int digits(int x) { int n = 1; if (x < 0) x = -x; while (x >= 10) { x /= 10; n++; } return n; }
FN int reverse_digits(int x) { int r = 0; int neg = x < 0; if (neg) x = -x; while (x) { r = r * 10 + x % 10; x /= 10; } return neg ? -r : r; }
FN int fib(int n) { if (n < 0) return 0; int a = 0, b = 1; for (int i = 0; i < n % 40; i++) { int t = a + b; a = b; b = t; } return a; }
FN int nested_loops(int n) { int c = 0; for (int i = 0; i < n % 20; i++) for (int j = i; j < n % 20; j++) c += i ^ j; return c; }
FN int first_set_bit(unsigned x) { if (!x) return -1; int i = 0; while (!(x & 1u)) { x >>= 1; i++; } return i; }
FN int count_down(int n) { int k = 0; while (n > 0) { n -= 7; k++; } return k * 100 + n; }
FN unsigned isqrt(unsigned x) { unsigned r = 0; while ((r + 1) * (r + 1) <= x && r < 4096) r++; return r; }

/* Switches. */
FN int small_switch(int k) { switch (k) { case 0: return 10; case 1: return 22; case 2: return 37; case 3: return 41; case 4: return 55; default: return -3; } }
FN int sparse_switch(int k) { switch (k) { case 1: return 1; case 10: return 2; case 100: return 3; case 1000: return 4; case -5: return 5; default: return 0; } }
FN int fallthrough(int k) { int r = 0; switch (k & 7) { case 0: r += 1; /* fall through */ case 1: r += 2; break; case 2: r += 4; /* fall through */ case 3: r += 8; break; case 6: r = -1; break; default: r = 100; } return r; }
FN int switch_loop(int n) { int s = 0; for (int i = 0; i < (n & 15); i++) { switch (i % 4) { case 0: s += 3; break; case 1: s -= 1; break; case 2: s *= 2; break; default: s ^= 5; } } return s; }
FN int char_class(int c) { switch (c & 127) { case 'a': case 'e': case 'i': case 'o': case 'u': return 1; case ' ': return 2; case '0': case '1': case '2': return 3; default: return 0; } }
FN long switch_long(long k) { switch (k % 6) { case 0: return 100000L; case 1: return -100000L; case 2: return k * 2; case 3: return k - 9; default: return 42; } }

/* Strings. */
FN int str_len(const char *s) { int n = 0; while (s[n]) n++; return n; }
FN int count_char(const char *s, int c) { int n = 0; char ch = (char)(c & 127); for (; *s; s++) if (*s == ch) n++; return n; }
FN int count_words(const char *s) { int n = 0, in = 0; for (; *s; s++) { if (*s == ' ') in = 0; else if (!in) { in = 1; n++; } } return n; }
FN unsigned hash_str(const char *s) { unsigned h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }
FN int atoi_simple(const char *s) { int n = 0, neg = 0; if (*s == '-') { neg = 1; s++; } while (*s >= '0' && *s <= '9' && n < 100000) n = n * 10 + (*s++ - '0'); return neg ? -n : n; }
FN void to_upper(char *s) { for (; *s; s++) if (*s >= 'a' && *s <= 'z') *s -= 32; }
FN void reverse_str(char *s) { int n = 0; while (s[n]) n++; for (int i = 0, j = n - 1; i < j; i++, j--) { char t = s[i]; s[i] = s[j]; s[j] = t; } }
FN int str_cmp(const char *a, const char *b) { while (*a && *a == *b) { a++; b++; } return (unsigned char)*a - (unsigned char)*b; }
FN int last_index(const char *s, int c) { int r = -1; char ch = (char)(c & 127); for (int i = 0; s[i]; i++) if (s[i] == ch) r = i; return r; }
FN int is_palindrome(const char *s) { int n = 0; while (s[n]) n++; for (int i = 0; i < n / 2; i++) if (s[i] != s[n - 1 - i]) return 0; return 1; }

/* Pointers and arrays. */
FN int arr_sum(const int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
FN int arr_max(const int *a, int n) { if (n <= 0) return -1; int m = a[0]; for (int i = 1; i < n; i++) if (a[i] > m) m = a[i]; return m; }
FN int arr_count_neg(const int *a, int n) { int c = 0; for (int i = 0; i < n; i++) c += a[i] < 0; return c; }
FN void arr_reverse(int *a, int n) { for (int i = 0, j = n - 1; i < j; i++, j--) { int t = a[i]; a[i] = a[j]; a[j] = t; } }
FN void arr_scale(int *a, int n, int k) { for (int i = 0; i < n; i++) a[i] = a[i] * (k % 100); }
FN int arr_index_of(const int *a, int n, int v) { for (int i = 0; i < n; i++) if (a[i] == v % 1000) return i; return -1; }
FN void bubble_sort(int *a, int n) { for (int i = 0; i < n; i++) for (int j = 0; j + 1 < n - i; j++) if (a[j] > a[j + 1]) { int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t; } }
FN long dot(const int *a, int n) { long s = 0; for (int i = 0; i + 1 < n; i += 2) s += (long)a[i] * a[i + 1]; return s; }
FN void prefix_sum(int *a, int n) { for (int i = 1; i < n; i++) a[i] += a[i - 1]; }
FN int ptr_diff(const int *a, int n) { const int *p = a, *q = a + n; while (p < q && *p >= 0) p++; return (int)(p - a); }

/* Structs. */
FN long pt_dist2(struct pt *p) { return (long)p->x * p->x + (long)p->y * p->y; }
FN void pt_swap(struct pt *p) { int t = p->x; p->x = p->y; p->y = t; }
FN int pt_quadrant(struct pt *p) { if (p->x >= 0) return p->y >= 0 ? 1 : 4; return p->y >= 0 ? 2 : 3; }
FN void acc_add(struct acc *a, int v) { a->sum += v; a->count++; if (a->count == 1 || v > a->max) a->max = v; }
FN long acc_mean(struct acc *a) { if (a->count <= 0) return 0; return a->sum / a->count; }
FN void pt_translate(struct pt *p, int dx, int dy) { p->x += dx; p->y -= dy; }

/* Calls between functions. */
FN int twice_classify(int a, int b) { return classify(a) * 2 + classify(b); }
FN int clamp_sum(const int *a, int n) { return clamp(arr_sum(a, n), -500, 500); }
