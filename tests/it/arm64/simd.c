/* NEON intrinsics for the vector instruction classes loops and libraries use: lane moves,
   table lookups, permutes, widening/narrowing and saturating arithmetic, across-lane
   reductions, structure loads and stores, by-element multiplies, crypto and dot products.
   Built with the extensions enabled (armv8.2-a+crypto+fp16+dotprod, or -mcpu=apple-m1). */
#include <arm_neon.h>

uint8x16_t table(uint8x16_t t, uint8x16_t i, uint8x16x2_t t2) { return vqtbl1q_u8(t, i) ^ vqtbl2q_u8(t2, i); }
int32x4_t permute(int32x4_t a, int32x4_t b) { return vaddq_s32(vaddq_s32(vzip1q_s32(a, b), vuzp2q_s32(a, b)), vaddq_s32(vtrn1q_s32(a, b), vextq_s32(a, b, 3))); }
int16x8_t widen_narrow(int8x16_t a, int32x4_t b, int32x4_t c) {
    int16x8_t w = vmovl_s8(vget_low_s8(a));
    int16x8_t n = vcombine_s16(vqmovn_s32(b), vmovn_s32(c));
    return vaddq_s16(vaddw_high_s8(w, a), vqaddq_s16(n, vshrq_n_s16(w, 3)));
}
uint32x4_t widen_mul(uint16x8_t a, uint16x8_t b) { return vmlal_high_u16(vmull_u16(vget_low_u16(a), vget_low_u16(b)), a, b); }
int32_t reduce(int32x4_t a, uint8x16_t b, float32x4_t f) { return vaddvq_s32(a) + vmaxvq_u8(b) + vminvq_u8(b) + (int32_t)vmaxnmvq_f32(f) + vaddlvq_u8(b); }
void structure(int16_t *p, int16x8x3_t v, float *q) {
    int16x8x3_t l = vld3q_s16(p);
    l.val[0] = vaddq_s16(l.val[0], v.val[0]);
    vst3q_s16(p + 48, l);
    float32x4x2_t f = vld2q_f32(q);
    vst2q_f32(q + 16, f);
    float32x4x4_t g = vld1q_f32_x4(q + 32);
    vst4q_f32(q + 64, g);
}
float32x4_t by_element(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_laneq_f32(vmulq_lane_f32(a, vget_low_f32(b), 1), b, c, 2); }
int32x4_t lanes(int32x4_t a, int32_t x, const int32_t *p) { a = vsetq_lane_s32(x, a, 2); a = vld1q_lane_s32(p, a, 1); return vdupq_laneq_s32(a, 3) + vld1q_dup_s32(p + 4); }
uint8x16_t bits(uint8x16_t a, uint8x16_t b, uint8x16_t m) { return vbslq_u8(m, a, b) ^ vcntq_u8(a) ^ vrev64q_u8(b) ^ vbicq_u8(a, m) ^ vornq_u8(b, m); }
int16x8_t shifts(int16x8_t a, int16x8_t s) { return vqrshlq_s16(a, s) + vrshrq_n_s16(a, 4) + vsraq_n_s16(a, s, 2) + vqshlq_n_s16(a, 3) + vsliq_n_s16(a, s, 5); }
uint16x8_t narrow_shift(uint32x4_t a, uint32x4_t b) { return vcombine_u16(vqrshrn_n_u32(a, 7), vshrn_n_u32(b, 9)); }
float32x4_t float_ops(float32x4_t a, float32x4_t b) { return vrecpeq_f32(a) + vrsqrteq_f32(b) + vabsq_f32(a) + vmaxnmq_f32(a, b) + vrndmq_f32(b) + vpaddq_f32(a, b); }
int32x4_t float_convert(float32x4_t a, int32x4_t b) { return vcvtq_s32_f32(a) + vcvtnq_s32_f32(a) + vcvtq_n_s32_f32(a, 4) + vreinterpretq_s32_f32(vcvtq_f32_s32(b)); }
float64x2_t double_ops(float64x2_t a, float32x4_t b) { return vcvt_high_f64_f32(b) + vfmaq_f64(a, a, a) + vsqrtq_f64(a); }
uint32x4_t compare(float32x4_t a, float32x4_t b, int32x4_t c) { return vcgtq_f32(a, b) | vceqzq_f32(a) | vcltzq_s32(c) | vtstq_s32(c, c) | vcageq_f32(a, b); }
uint8x16_t absdiff(uint8x16_t a, uint8x16_t b, uint16x8_t acc) { return vabdq_u8(a, b) + vreinterpretq_u8_u16(vabal_u8(acc, vget_low_u8(a), vget_low_u8(b))) + vhaddq_u8(a, b) + vrhaddq_u8(a, b); }
int64x2_t pairwise(int32x4_t a, int64x2_t b) { return vpadalq_s32(b, a) + vpaddlq_s32(a); }
uint8x16_t aes(uint8x16_t data, uint8x16_t key) { return vaesmcq_u8(vaeseq_u8(data, key)) ^ vaesimcq_u8(vaesdq_u8(data, key)); }
uint32x4_t sha(uint32x4_t a, uint32x4_t b, uint32x4_t c) { return vsha256hq_u32(a, b, c) + vsha1su0q_u32(a, b, c) + vsha256su1q_u32(a, b, c); }
uint64x2_t poly(uint64_t a, uint64_t b) { return vreinterpretq_u64_p128(vmull_p64(a, b)); }
uint32x4_t dot(uint32x4_t acc, uint8x16_t a, uint8x16_t b) { return vdotq_u32(acc, a, b) + vdotq_laneq_u32(acc, a, b, 1); }
float16x8_t half(float16x8_t a, float16x8_t b) { return vfmaq_f16(a, a, b) + vcvtq_f16_s16(vcvtq_s16_f16(b)); }
int32_t scalar_sat(int32_t a, int32_t b, int16_t c) { return vqaddd_s64(a, b) + vqdmulhs_s32(a, b) + vqabsh_s16(c) + vqmovns_s32(a); }
uint64_t move_out(uint8x16_t a, int16x8_t b, uint64x2_t c) { return vgetq_lane_u8(a, 7) + (uint64_t)vgetq_lane_s16(b, 5) + vgetq_lane_u64(c, 1); }
float32x2_t d_regs(float32x2_t a, float32x2_t b, uint32x2_t c) { return vbsl_f32(c, vadd_f32(a, b), vmul_n_f32(a, 3.0f)); }
int8x16_t immediates(void) { return vdupq_n_s8(-3) + vreinterpretq_s8_u32(vdupq_n_u32(0xff00)) + vreinterpretq_s8_u64(vdupq_n_u64(0xff00ff0000ffffffull)) + vreinterpretq_s8_f32(vdupq_n_f32(-1.5f)); }
uint32x4_t post_index(const uint8_t *p, long n, uint8_t *out) {
    uint32x4_t acc = vdupq_n_u32(0);
    while (n--) {
        uint8x16_t v = vld1q_u8(p);
        p += 16;
        acc = vpadalq_u16(acc, vpaddlq_u8(v));
        vst1q_u8(out, v);
        out += 32;
    }
    return acc;
}
float64x2_t lane_moves(float64x2_t a, double d, int64_t x) { a = vsetq_lane_f64(d, a, 1); return vreinterpretq_f64_s64(vsetq_lane_s64(x, vreinterpretq_s64_f64(a), 0)); }
int8x16_t signed_moves(int8x16_t a, int32_t *out) { out[0] = vgetq_lane_s8(a, 3); out[1] = vgetq_lane_s16(vreinterpretq_s16_s8(a), 2); return vqtbx1q_s8(a, a, vreinterpretq_u8_s8(a)); }
uint16x8_t mvn_imm(uint16x8_t a) { return vandq_u16(a, vdupq_n_u16(0xff0f)) | vdupq_n_u16(0x3f00); }
float32x4_t vector_fixed(int32x4_t a, float32x4_t b) { return vcvtq_n_f32_s32(a, 8) + vrndnq_f32(b) + vnegq_f32(vfmsq_f32(b, b, b)); }
uint64x2_t ushll(uint32x4_t a, uint8x8_t b) { return vshll_n_u32(vget_high_u32(a), 3) + vmovl_u32(vget_low_u32(vmovl_u16(vget_low_u16(vmovl_u8(b))))); }
