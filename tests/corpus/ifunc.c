/* Ground-truth shared library for rea's differential suite: a GNU indirect function, aliases
 * and symbol versions (with ifunc.map as the version script). */

#define KEEP __attribute__((noipa, used))

KEEP int impl_fast(int x) { return x * 2 + 1; }
KEEP int impl_slow(int x) { return x + x + 1; }

typedef int (*impl_fn)(int);

/* The resolver runs at load time and picks an implementation. */
static impl_fn resolve_compute(void) { return impl_fast; }

/* `compute` is an IFUNC: its symbol's value is the resolver's address. */
int compute(int x) __attribute__((ifunc("resolve_compute")));

/* One function, three names. */
KEEP int area_total(int w, int h) { return w * h; }
int area_alias(int w, int h) __attribute__((alias("area_total")));
int __area_internal(int w, int h) __attribute__((alias("area_total")));

/* Two versions of `measure`: the compat one and the default one. */
KEEP int measure_v1(int x) { return x + 1; }
KEEP int measure_v2(int x) { return x + 2; }
__asm__(".symver measure_v1, measure@VERS_1.0");
__asm__(".symver measure_v2, measure@@VERS_2.0");

KEEP int user(int x) { return compute(x) + area_total(x, 3) + measure_v2(x); }
