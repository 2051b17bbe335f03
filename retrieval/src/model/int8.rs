//! The encoder's matrix products in eight-bit integers (`precision = "int8"`), `y += x · wᵀ`
//! as dynamic quantisation computes it: each output's weights scaled to `[-127, 127]` once, at
//! load (symmetric, one scale per output); each row of `x` scaled to `[-127, 127]` per product
//! and shifted by 128 into an unsigned byte; the products summed exactly in 32-bit integers,
//! and the shift's share (128 times the output's weight sum) taken off before the two scales
//! turn the sum back into a float.
//!
//! The sums are integers, so they are the same on every CPU: with AVX-512 VNNI (`vpdpbusd`:
//! 64 byte products a cycle where f32 does 16 multiply-adds) the kernel below runs them, and
//! without it a plain loop computes the same numbers, more slowly. The float steps around them
//! round as the rest of the forward pass does.
//!
//! This is the only module of kledger that allows `unsafe`, for one call: a function compiled
//! for VNNI may only be called once the CPU is known to have it (checked just before).

#![allow(unsafe_code)]

use pulp::{Simd, WithSimd};

use super::gemm::dispatch;

/// Output columns per packed panel: four vectors of sixteen 32-bit sums.
const NR: usize = 64;
/// Rows per block (their bytes stay in L2 while every panel passes over them).
const MC: usize = 96;
/// Rows a micro-kernel keeps in registers (6 × 4 vectors of sums).
const MR: usize = 6;
/// The quantised range of a weight or an input: `[-127, 127]` (symmetric, so −128 is unused).
const LEVELS: f32 = 127.0;
/// What an input byte is shifted by (the unsigned operand of `vpdpbusd`).
const SHIFT: i32 = 128;
/// Adding 1.5 · 2²³ to an f32 below 2²² rounds it to the nearest integer (ties to even),
/// which the sum's low mantissa bits then hold, without a call or a conversion.
const ROUND: f32 = 12_582_912.0;

/// A panel's bytes for one group of four inputs: four vectors, each sixteen output columns
/// of four weights (aligned, so that the kernel reads each vector in one load).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Quad([[i8; 64]; 4]);

/// Weights `[out, in]` in eight bits, packed into panels of [`NR`] outputs: panel `p`, group
/// `g` of four inputs holds, for each output column `c` of the panel, its weights of inputs
/// `4g .. 4g + 4` side by side (the layout `vpdpbusd` multiplies a broadcast row's four bytes
/// with).
#[derive(Debug)]
pub(super) struct Quantized {
    out: usize,
    inp: usize,
    /// Groups of four inputs (the last padded with zero weights).
    quads: usize,
    panels: Vec<Quad>,
    /// Each output's scale: its weight is `scale · q`.
    scale: Vec<f32>,
    /// Each output's `128 · Σ q` (the shift's share of a sum).
    shifted: Vec<i32>,
    vnni: bool,
}

impl Quantized {
    /// Quantises and packs `w`, `out` rows of `inp` weights each, row-major.
    pub(super) fn new(w: &[f32], out: usize, inp: usize) -> Self {
        assert_eq!(w.len(), out * inp, "weights of the stated shape");
        let quads = inp.div_ceil(4);
        let mut panels = vec![Quad([[0i8; 64]; 4]); out.div_ceil(NR) * quads];
        let (mut scale, mut shifted) = (Vec::with_capacity(out), Vec::with_capacity(out));
        for (o, row) in w.chunks_exact(inp.max(1)).take(out).enumerate() {
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if max > 0.0 { max / LEVELS } else { 1.0 };
            let mut sum = 0i32;
            let (p, c) = (o / NR, o % NR);
            for (k, v) in row.iter().enumerate() {
                let q = (v / s).round().clamp(-LEVELS, LEVELS) as i8;
                sum += i32::from(q);
                panels[p * quads + k / 4].0[c / 16][(c % 16) * 4 + k % 4] = q;
            }
            scale.push(s);
            shifted.push(SHIFT * sum);
        }
        Self {
            out,
            inp,
            quads,
            panels,
            scale,
            shifted,
            vnni: vnni(),
        }
    }

    /// `y += x · wᵀ`: `x` holds `m` rows of `inp` values, `y` the same `m` rows of `out`.
    pub(super) fn mul_add(&self, x: &[f32], y: &mut [f32]) {
        self.mul_add_on(x, y, self.vnni);
    }

    /// [`Quantized::mul_add`], with the VNNI kernel or without.
    fn mul_add_on(&self, x: &[f32], y: &mut [f32], vnni: bool) {
        let m = x.len() / self.inp.max(1);
        assert_eq!(x.len(), m * self.inp, "x of whole rows");
        assert_eq!(y.len(), m * self.out, "y of the same rows");
        let mut rows = vec![0u32; m * self.quads];
        let mut scales = vec![0f32; m];
        dispatch(Quantise {
            x,
            inp: self.inp,
            quads: self.quads,
            rows: bytemuck::cast_slice_mut(&mut rows),
            scales: &mut scales,
        });
        let input = Input {
            rows: &rows,
            scales: &scales,
            quads: self.quads,
        };
        if vnni {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `vnni` is true only when the CPU has every feature `vnni_products` is
            // compiled for (`vnni()`, checked at run time when the weights were packed); the
            // function itself is safe code.
            unsafe {
                vnni_products(self, &input, y)
            };
        } else {
            self.plain_products(&input, y);
        }
    }

    /// The products without vector instructions (CPUs without VNNI; and the reference the
    /// tests compare the kernel with): the same integer sums, turned into floats alike.
    fn plain_products(&self, input: &Input<'_>, y: &mut [f32]) {
        for (i, y) in y.chunks_exact_mut(self.out).enumerate() {
            let row = input.row(i);
            for (p, panel) in self.panels.chunks_exact(self.quads).enumerate() {
                let c0 = p * NR;
                let width = (self.out - c0).min(NR);
                let mut sums = [0i32; NR];
                for (word, quad) in row.iter().zip(panel) {
                    let x = word.to_le_bytes().map(i32::from);
                    for (c, sum) in sums.iter_mut().enumerate() {
                        let w = &quad.0[c / 16][(c % 16) * 4..(c % 16) * 4 + 4];
                        *sum += x.iter().zip(w).map(|(x, w)| x * i32::from(*w)).sum::<i32>();
                    }
                }
                self.dequantise(input.scales[i], c0, &sums[..width], &mut y[c0..c0 + width]);
            }
        }
    }

    /// `y += a · scale · (sum − shifted)` for the outputs from `c0` on (`a` the row's scale).
    #[inline(always)]
    fn dequantise(&self, a: f32, c0: usize, sums: &[i32], y: &mut [f32]) {
        for (((y, sum), s), shift) in y
            .iter_mut()
            .zip(sums)
            .zip(&self.scale[c0..])
            .zip(&self.shifted[c0..])
        {
            *y += a * s * (sum - shift) as f32;
        }
    }
}

/// The quantised rows of one product's input: each row's bytes four to a word, and its scale.
struct Input<'a> {
    rows: &'a [u32],
    scales: &'a [f32],
    quads: usize,
}

impl Input<'_> {
    fn row(&self, i: usize) -> &[u32] {
        &self.rows[i * self.quads..(i + 1) * self.quads]
    }
}

/// Each row of `x` in bytes (`x / scale + 128`, the row's words' bytes; padded with 128s,
/// whose products with the padding's zero weights are zero), and each row's scale
/// (`max |x| / 127`), in the CPU's vector lanes.
struct Quantise<'a> {
    x: &'a [f32],
    inp: usize,
    quads: usize,
    rows: &'a mut [u8],
    scales: &'a mut [f32],
}

impl WithSimd for Quantise<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Quantise {
            x,
            inp,
            quads,
            rows,
            scales,
        } = self;
        for ((row, bytes), scale) in x
            .chunks_exact(inp.max(1))
            .zip(rows.chunks_exact_mut(4 * quads.max(1)))
            .zip(scales.iter_mut())
        {
            let (head, tail) = S::as_simd_f32s(row);
            let mut max = simd.splat_f32s(0.0);
            for v in head {
                max = simd.max_f32s(max, simd.abs_f32s(*v));
            }
            let max = tail
                .iter()
                .fold(simd.reduce_max_f32s(max), |m, v| m.max(v.abs()));
            let inv = if max > 0.0 { LEVELS / max } else { 0.0 };
            *scale = max / LEVELS;
            // `x / scale`, rounded and shifted by adding 1.5 · 2²³ + 128: the sum's low eight
            // bits are the byte.
            for (b, v) in bytes.iter_mut().zip(row) {
                *b = ((v * inv).clamp(-LEVELS, LEVELS) + (ROUND + SHIFT as f32)).to_bits() as u8;
            }
            bytes[row.len()..].fill(SHIFT as u8);
        }
    }
}

/// Whether this CPU runs [`vnni_products`].
pub(super) fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The products with AVX-512 VNNI: blocks of [`MC`] rows, each panel against up to [`MR`] of
/// them at a time, all of a row's inputs summed in registers and turned into floats at once.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn vnni_products(w: &Quantized, input: &Input<'_>, y: &mut [f32]) {
    let m = input.scales.len();
    for i0 in (0..m).step_by(MC) {
        let i1 = (i0 + MC).min(m);
        for (p, panel) in w.panels.chunks_exact(w.quads).enumerate() {
            let tile = Tile {
                w,
                panel,
                input,
                c0: p * NR,
            };
            let mut i = i0;
            while i < i1 {
                let n = (i1 - i).min(MR);
                match n {
                    6.. => tile.run::<6>(i, y),
                    5 => tile.run::<5>(i, y),
                    4 => tile.run::<4>(i, y),
                    3 => tile.run::<3>(i, y),
                    2 => tile.run::<2>(i, y),
                    _ => tile.run::<1>(i, y),
                }
                i += n;
            }
        }
    }
}

/// One panel against rows of the quantised input.
#[cfg(target_arch = "x86_64")]
struct Tile<'a> {
    w: &'a Quantized,
    panel: &'a [Quad],
    input: &'a Input<'a>,
    c0: usize,
}

#[cfg(target_arch = "x86_64")]
impl Tile<'_> {
    /// Adds rows `i .. i + R` times the panel into their outputs.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn run<const R: usize>(&self, i: usize, y: &mut [f32]) {
        use std::arch::x86_64::{__m512i, _mm512_dpbusd_epi32, _mm512_set1_epi32};
        let zero: __m512i = bytemuck::cast([0i32; 16]);
        let mut acc = [[zero; 4]; R];
        let xs: [&[u32]; R] = std::array::from_fn(|r| self.input.row(i + r));
        for (g, quad) in self.panel.iter().enumerate() {
            let b: &[__m512i; 4] = bytemuck::cast_ref(&quad.0);
            for r in 0..R {
                let x = _mm512_set1_epi32(xs[r][g] as i32);
                for v in 0..4 {
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], x, b[v]);
                }
            }
        }
        let out = self.w.out;
        let width = (out - self.c0).min(NR);
        for (r, a) in acc.iter().enumerate() {
            let sums: [i32; NR] = bytemuck::cast(*a);
            let at = (i + r) * out + self.c0;
            self.w.dequantise(
                self.input.scales[i + r],
                self.c0,
                &sums[..width],
                &mut y[at..at + width],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::values;
    use super::*;

    /// Rows not a multiple of any tile height, outputs not a multiple of a panel, inputs not a
    /// multiple of four nor of a block.
    const SHAPES: [(usize, usize, usize); 7] = [
        (1, 64, 8),
        (13, 70, 300),
        (97, 33, 513),
        (8, 128, 256),
        (6, 96, 40),
        (7, 64, 3),
        (200, 130, 1030),
    ];

    #[test]
    fn the_kernel_gives_the_same_floats_as_the_plain_loop() {
        if !vnni() {
            eprintln!("this CPU has no AVX-512 VNNI: only the plain products run here");
            return;
        }
        for (m, out, inp) in SHAPES {
            let w = Quantized::new(&values(out * inp, 1), out, inp);
            let x = values(m * inp, 2);
            let start = values(m * out, 3);
            let (mut fast, mut slow) = (start.clone(), start);
            w.mul_add_on(&x, &mut fast, true);
            w.mul_add_on(&x, &mut slow, false);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&slow), "{m}×{inp}·{inp}×{out}");
            assert!(fast.iter().any(|v| v.abs() > 1.0));
        }
    }

    #[test]
    fn products_are_within_quantisation_error_of_the_float_ones() {
        for (m, out, inp) in SHAPES {
            let (wf, x) = (values(out * inp, 3), values(m * inp, 4));
            let w = Quantized::new(&wf, out, inp);
            let mut y = vec![0.5f32; m * out];
            w.mul_add(&x, &mut y);
            let mut worst = 0f32;
            for i in 0..m {
                for o in 0..out {
                    let exact: f32 = (0..inp).map(|k| x[i * inp + k] * wf[o * inp + k]).sum();
                    worst = worst.max((y[i * out + o] - 0.5 - exact).abs());
                }
            }
            // Each of `inp` products is off by at most about one step of either scale (1/127
            // of the largest value, here 1): the errors are independent, so they grow as the
            // square root of the count.
            let bound = 2.0 * (inp as f32).sqrt() / LEVELS;
            assert!(worst < bound, "{m}×{inp}·{inp}×{out}: off by {worst}");
        }
        // A row of zeros stays zero; the bias stays the bias.
        let w = Quantized::new(&values(64 * 16, 5), 64, 16);
        let mut y = vec![0.25f32; 64];
        w.mul_add(&[0.0; 16], &mut y);
        assert!(y.iter().all(|v| *v == 0.25));
    }
}
