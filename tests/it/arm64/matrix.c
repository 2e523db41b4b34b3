/* Armv8.6 matrix and brain-float instructions and the fp16 multiply-long family, as machine
   learning kernels use them through intrinsics (built with +i8mm+bf16+fp16fml). */
#include <arm_neon.h>

int32x4_t int8_matrix(int32x4_t acc, int8x16_t a, int8x16_t b, uint8x16_t u) {
    return vmmlaq_s32(acc, a, b) + vreinterpretq_s32_u32(vmmlaq_u32(vreinterpretq_u32_s32(acc), u, u)) + vusmmlaq_s32(acc, u, a);
}
int32x4_t mixed_dot(int32x4_t acc, uint8x16_t u, int8x16_t s, int8x8_t d) {
    return vusdotq_s32(acc, u, s) + vusdotq_laneq_s32(acc, u, s, 1) + vsudotq_lane_s32(acc, s, vreinterpret_u8_s8(d), 0);
}
float32x4_t brain_float(float32x4_t acc, bfloat16x8_t a, bfloat16x8_t b) {
    return vbfdotq_f32(acc, a, b) + vbfdotq_laneq_f32(acc, a, b, 2) + vbfmmlaq_f32(acc, a, b) + vbfmlalbq_f32(acc, a, b) + vbfmlaltq_laneq_f32(acc, a, b, 5);
}
bfloat16x8_t to_brain_float(float32x4_t a, float32x4_t b) { return vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(a), b); }
bfloat16_t scalar_brain_float(float a) { return vcvth_bf16_f32(a); }
float32x4_t half_long(float32x4_t acc, float16x8_t a, float16x8_t b) {
    return vfmlalq_low_f16(acc, a, b) + vfmlslq_high_f16(acc, a, b) + vfmlalq_laneq_high_f16(acc, a, b, 3);
}
float32x2_t half_long_d(float32x2_t acc, float16x4_t a, float16x4_t b) { return vfmlsl_low_f16(acc, a, b) + vfmlal_high_f16(acc, a, b); }
