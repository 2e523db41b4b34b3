/* Atomics and exclusives: compiled with LSE (armv8.1-a) and without it (exclusive load/store
   loops), acquire/release loads and stores, fences, compare-and-swap, and thread-local data. */
typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

u64 fetch_add(u64 *p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
u32 fetch_or(u32 *p, u32 v) { return __atomic_fetch_or(p, v, __ATOMIC_ACQUIRE); }
u16 fetch_and(u16 *p, u16 v) { return __atomic_fetch_and(p, v, __ATOMIC_RELEASE); }
u8 fetch_xor(u8 *p, u8 v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
u64 exchange(u64 *p, u64 v) { return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL); }
int cas(u32 *p, u32 expect, u32 desired) {
    return __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
int cas_weak(u64 *p, u64 *expect, u64 desired) {
    return __atomic_compare_exchange_n(p, expect, desired, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
u64 load_acquire(u64 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
u8 load_acquire8(u8 *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
void store_release(u32 *p, u32 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
void store_release16(u16 *p, u16 v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
void fences(void) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}
u64 sub_fetch(u64 *p) { return __atomic_sub_fetch(p, 1, __ATOMIC_SEQ_CST); }
u32 spin(u32 *lock) {
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) { }
    u32 v = *lock;
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    return v;
}
__thread int tls_counter;
int bump_tls(int v) { tls_counter += v; return tls_counter; }
int cas128(unsigned __int128 *p, unsigned __int128 expect, unsigned __int128 desired) {
    return __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
unsigned __int128 load128(unsigned __int128 *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
u32 min_max(u32 *p, int *q, u32 v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED) + __atomic_fetch_sub(q, 3, __ATOMIC_RELAXED); }
