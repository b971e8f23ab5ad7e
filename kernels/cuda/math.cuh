/*
 * math.cuh — device math shared by the kernels of kernels/cuda/: the exact-erf GELU, used
 * by the unary slot (ops.cu) and by the matmul epilogue (gemm.cu), accurate to a few u
 * over the whole float range (1 + erf(x / sqrt 2) in f32 loses every digit below x = -5).
 */
#ifndef JEPA_KERNELS_CUDA_MATH_CUH
#define JEPA_KERNELS_CUDA_MATH_CUH

#include "kernels/cuda/compat.cuh"

/* (1 + 2z) erfcx(z) = (1 + 2z) e^(z^2) erfc(z) as a polynomial in t = (z - 2) / (z + 2),
 * least-squares fit over z in [0, 14.2] (t in [-1, 0.75]) of relative error 5.5e-10;
 * evaluated in f32 with fma, 1.5 u. */
__device__ __forceinline__ float erfcx_scaled(float t) {
    float q = 9.270242117e-06f;
    q = fmaf(q, t, 9.860914724e-05f);
    q = fmaf(q, t, 1.682657457e-04f);
    q = fmaf(q, t, -4.236499954e-04f);
    q = fmaf(q, t, -1.427537878e-03f);
    q = fmaf(q, t, 1.262795296e-03f);
    q = fmaf(q, t, 8.712911978e-03f);
    q = fmaf(q, t, -8.032876998e-03f);
    q = fmaf(q, t, -5.421855301e-02f);
    q = fmaf(q, t, 1.640512049e-01f);
    q = fmaf(q, t, -1.660304815e-01f);
    q = fmaf(q, t, -9.276382625e-02f);
    q = fmaf(q, t, 1.276978374e+00f);
    return q;
}

/* Exact-erf GELU, 0.5 x (1 + erf(x / sqrt2)).
 *   x >= 0: x (0.5 + 0.5 erf(x / sqrt2)), no cancellation (the bracket is in [0.5, 1]).
 *   x < 0:  0.5 x erfc(z), z = -x / sqrt2, erfc(z) = e^(-x^2/2) erfcx(z), with
 *           x^2 = h + l exactly (fma), e^(-x^2/2) = e^(-h/2) (1 - l/2), erfcx(z) =
 *           q(t) / (1 + 2z); past x = -12.6, e^(-h/2) is formed as e^(-h/4)^2 so that
 *           every factor stays a normal float and a subnormal result rounds once.
 * A few u relative everywhere, where 1 + erf(x / sqrt2) in f32 would lose all digits
 * below x = -5. */
__device__ __forceinline__ float gelu_erf(float x) {
    if (x >= 0.0f) return x * fmaf(0.5f, erff(x * 0.70710678118654752f), 0.5f);
    const float xc = x < -20.0f ? -20.0f : x;   /* the result is 0 from -14.5; NaN stays */
    const float z = xc * -0.70710678118654752f;
    const float q = erfcx_scaled((z - 2.0f) / (z + 2.0f));
    const float h = xc * xc, l = fmaf(xc, xc, -h);
    /* x last where the result may be subnormal (tiny x), e last where e may be */
    const float f = 0.5f * q / fmaf(2.0f, z, 1.0f) * fmaf(-0.5f, l, 1.0f);
    if (h < 160.0f) return xc * (f * expf(-0.5f * h));
    const float e = expf(-0.25f * h);
    return ((xc * f) * e) * e;
}

#endif
