//! The encoder's matrix products, `y += x · wᵀ`, on the widest vector unit the CPU has
//! (AVX-512 where present, else AVX2 and FMA), chosen at run time by `pulp`'s safe dispatch;
//! and the vector helpers the rest of the forward pass runs in the same dispatch (attention's
//! weighted sums, LayerNorm's moments).
//!
//! The weights are packed once, at load, into panels of [`NR`] output columns: panel `p` holds,
//! for every input `k`, the `NR` weights of outputs `p·NR ..`, so the inner loop reads them in
//! order. A micro-kernel keeps an `MR × NR` tile of `y` in registers while it walks `k`; the walk
//! is cut into blocks of [`KC`] inputs so that a panel's block stays in the L1 cache, and the rows
//! into blocks of [`MC`] so that theirs stay in L2. The sums are the same products added in a
//! different order than another library's, so vectors differ from theirs by float rounding only.

use pulp::{Arch, Simd, WithSimd};

/// Output columns per packed panel (two AVX-512 vectors, four AVX2 ones).
const NR: usize = 32;
/// Inputs walked per block.
const KC: usize = 256;
/// Rows per block.
const MC: usize = 96;

/// Weights `[out, in]` packed into panels of [`NR`] outputs (the last padded with zeros).
#[derive(Debug)]
pub(super) struct Packed {
    out: usize,
    inp: usize,
    panels: Vec<f32>,
}

impl Packed {
    /// Packs `w`, `out` rows of `inp` weights each, row-major.
    pub(super) fn new(w: &[f32], out: usize, inp: usize) -> Self {
        assert_eq!(w.len(), out * inp, "weights of the stated shape");
        let count = out.div_ceil(NR);
        let mut panels = vec![0f32; count * inp * NR];
        for (o, row) in w.chunks_exact(inp).enumerate() {
            let panel = &mut panels[(o / NR) * inp * NR..];
            for (k, v) in row.iter().enumerate() {
                panel[k * NR + o % NR] = *v;
            }
        }
        Self { out, inp, panels }
    }

    /// `y += x · wᵀ`: `x` holds `m` rows of `inp` values, `y` the same `m` rows of `out`.
    pub(super) fn mul_add(&self, x: &[f32], y: &mut [f32]) {
        let m = x.len() / self.inp.max(1);
        assert_eq!(x.len(), m * self.inp, "x of whole rows");
        assert_eq!(y.len(), m * self.out, "y of the same rows");
        dispatch(Product { w: self, x, y, m });
    }

    /// The same product without vectors, one multiply-add at a time (the reference the tests
    /// compare the kernels with).
    #[cfg(test)]
    fn mul_add_scalar(&self, x: &[f32], y: &mut [f32]) {
        let m = x.len() / self.inp;
        for i in 0..m {
            for o in 0..self.out {
                let panel = &self.panels[(o / NR) * self.inp * NR..];
                let mut acc = y[i * self.out + o];
                for k in 0..self.inp {
                    acc = x[i * self.inp + k].mul_add(panel[k * NR + o % NR], acc);
                }
                y[i * self.out + o] = acc;
            }
        }
    }
}

struct Product<'a> {
    w: &'a Packed,
    x: &'a [f32],
    y: &'a mut [f32],
    m: usize,
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        match size_of::<S::f32s>() / size_of::<f32>() {
            16 => blocks::<S, 8, 2>(simd, self),
            8 => blocks::<S, 3, 4>(simd, self),
            4 => blocks::<S, 2, 8>(simd, self),
            _ => blocks::<S, 1, 32>(simd, self),
        }
    }
}

/// Walks the blocks, at most `MR` (≤ 8) rows at a time, each row's tile `NV` vectors wide
/// (`NV` vectors of `S` make [`NR`] lanes).
#[inline(always)]
fn blocks<S: Simd, const MR: usize, const NV: usize>(simd: S, p: Product<'_>) {
    let Product { w, x, y, m } = p;
    let (inp, out) = (w.inp, w.out);
    let mut edge = [0f32; NR];
    for k0 in (0..inp).step_by(KC) {
        let k1 = (k0 + KC).min(inp);
        for i0 in (0..m).step_by(MC) {
            let i1 = (i0 + MC).min(m);
            for (pi, panel) in w.panels.chunks_exact(inp * NR).enumerate() {
                let panel = &panel[k0 * NR..k1 * NR];
                let c0 = pi * NR;
                let width = (out - c0).min(NR);
                let tile = Tile {
                    x,
                    inp,
                    k0,
                    k1,
                    panel,
                };
                let mut i = i0;
                while i < i1 {
                    let rows = (i1 - i).min(MR);
                    if width == NR {
                        let at = |r: usize| (i + r) * out + c0;
                        // Every height up to MR has its own kernel: a query's few rows walk
                        // the panel once, not once per row.
                        match rows {
                            8.. => tile.run::<S, 8, NV>(simd, i, y, at),
                            7 => tile.run::<S, 7, NV>(simd, i, y, at),
                            6 => tile.run::<S, 6, NV>(simd, i, y, at),
                            5 => tile.run::<S, 5, NV>(simd, i, y, at),
                            4 => tile.run::<S, 4, NV>(simd, i, y, at),
                            3 => tile.run::<S, 3, NV>(simd, i, y, at),
                            2 => tile.run::<S, 2, NV>(simd, i, y, at),
                            _ => tile.run::<S, 1, NV>(simd, i, y, at),
                        }
                    } else {
                        // The last, partial panel: through a full-width scratch row.
                        for r in 0..rows {
                            let at = (i + r) * out + c0;
                            edge[..width].copy_from_slice(&y[at..at + width]);
                            tile.run::<S, 1, NV>(simd, i + r, &mut edge, |_| 0);
                            y[at..at + width].copy_from_slice(&edge[..width]);
                        }
                    }
                    i += rows;
                }
            }
        }
    }
}

/// One panel's block of inputs against rows of `x`.
struct Tile<'a> {
    x: &'a [f32],
    inp: usize,
    k0: usize,
    k1: usize,
    panel: &'a [f32],
}

impl Tile<'_> {
    /// Adds rows `i .. i + MR` of `x` times the panel's block into the [`NR`] values of `y`
    /// from `at(r)` on.
    #[inline(always)]
    fn run<S: Simd, const MR: usize, const NV: usize>(
        &self,
        simd: S,
        i: usize,
        y: &mut [f32],
        at: impl Fn(usize) -> usize,
    ) {
        let mut acc = [[simd.splat_f32s(0.0); NV]; MR];
        for (r, a) in acc.iter_mut().enumerate() {
            let (v, _) = S::as_simd_f32s(&y[at(r)..at(r) + NR]);
            a.copy_from_slice(&v[..NV]);
        }
        let xs: [&[f32]; MR] = std::array::from_fn(|r| {
            let at = (i + r) * self.inp;
            &self.x[at + self.k0..at + self.k1]
        });
        for (kk, b) in self.panel.chunks_exact(NR).enumerate() {
            let (b, _) = S::as_simd_f32s(b);
            for r in 0..MR {
                let a = simd.splat_f32s(xs[r][kk]);
                for v in 0..NV {
                    acc[r][v] = simd.mul_add_e_f32s(a, b[v], acc[r][v]);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            let (v, _) = S::as_mut_simd_f32s(&mut y[at(r)..at(r) + NR]);
            v[..NV].copy_from_slice(a);
        }
    }
}

/// Runs `op` on the widest vector unit the CPU has (the same dispatch as the products).
pub(super) fn dispatch<Op: WithSimd>(op: Op) -> Op::Output {
    Arch::new().dispatch(op)
}

/// `outs[r] += Σₖ coeffs[r][k] · row(k)` for `R` outputs at once, each with its own
/// coefficients over the same rows (every output the same length, every row at least that
/// long), the sums kept in registers a few vectors at a time and stored once. The rows are read once for all `R`, and the `R` sums of each vector are chains
/// of their own, so the multiply-adds overlap rather than wait on one another.
#[inline(always)]
pub(super) fn combine_rows<'r, S: Simd, const R: usize>(
    simd: S,
    coeffs: [&[f32]; R],
    row: impl Fn(usize) -> &'r [f32],
    outs: [&mut [f32]; R],
) {
    let lanes = lanes::<S>();
    let width = outs.first().map_or(0, |o| o.len());
    let whole = width / lanes;
    let mut outs = outs;
    let mut from = 0;
    while from < whole {
        let n = (whole - from).min(4);
        match n {
            4 => combine_rows_tile::<S, R, 4>(simd, coeffs, &row, from * lanes, &mut outs),
            3 => combine_rows_tile::<S, R, 3>(simd, coeffs, &row, from * lanes, &mut outs),
            2 => combine_rows_tile::<S, R, 2>(simd, coeffs, &row, from * lanes, &mut outs),
            _ => combine_rows_tile::<S, R, 1>(simd, coeffs, &row, from * lanes, &mut outs),
        }
        from += n;
    }
    let done = whole * lanes;
    for (out, coeffs) in outs.iter_mut().zip(coeffs) {
        for (k, c) in coeffs.iter().enumerate() {
            for (o, r) in out[done..].iter_mut().zip(&row(k)[done..width]) {
                *o = c.mul_add(*r, *o);
            }
        }
    }
}

/// [`combine_rows`] of `N` vectors of each output, from column `from`.
#[inline(always)]
// `k` indexes every output's coefficients in the one walk over the rows.
#[allow(clippy::needless_range_loop)]
fn combine_rows_tile<'r, S: Simd, const R: usize, const N: usize>(
    simd: S,
    coeffs: [&[f32]; R],
    row: &impl Fn(usize) -> &'r [f32],
    from: usize,
    outs: &mut [&mut [f32]; R],
) {
    let lanes = lanes::<S>();
    let mut acc: [[S::f32s; N]; R] = std::array::from_fn(|r| {
        let (v, _) = S::as_simd_f32s(&outs[r][from..from + N * lanes]);
        std::array::from_fn(|i| v[i])
    });
    let k = coeffs.iter().map(|c| c.len()).min().unwrap_or(0);
    for k in 0..k {
        let (x, _) = S::as_simd_f32s(&row(k)[from..from + N * lanes]);
        for r in 0..R {
            let a = simd.splat_f32s(coeffs[r][k]);
            for v in 0..N {
                acc[r][v] = simd.mul_add_e_f32s(a, x[v], acc[r][v]);
            }
        }
    }
    for (out, acc) in outs.iter_mut().zip(&acc) {
        let (v, _) = S::as_mut_simd_f32s(&mut out[from..from + N * lanes]);
        v.copy_from_slice(acc);
    }
}

/// `Σ (v - shift)` and `Σ (v - shift)²` over `v`, in vector lanes.
#[inline(always)]
pub(super) fn moments<S: Simd>(simd: S, v: &[f32], shift: f32) -> (f32, f32) {
    let s = simd.splat_f32s(shift);
    let (head, tail) = S::as_simd_f32s(v);
    let (mut sum, mut squares) = (simd.splat_f32s(0.0), simd.splat_f32s(0.0));
    for x in head {
        let d = simd.sub_f32s(*x, s);
        sum = simd.add_f32s(sum, d);
        squares = simd.mul_add_e_f32s(d, d, squares);
    }
    let (mut sum, mut squares) = (simd.reduce_sum_f32s(sum), simd.reduce_sum_f32s(squares));
    for x in tail {
        let d = x - shift;
        sum += d;
        squares = d.mul_add(d, squares);
    }
    (sum, squares)
}

/// Lanes of `S`'s f32 vectors.
#[inline(always)]
pub(super) fn lanes<S: Simd>() -> usize {
    size_of::<S::f32s>() / size_of::<f32>()
}

/// Applies `f` to every value of `v` inside the dispatch, so that the compiler may vectorise
/// `f` for the CPU's widest unit.
pub(super) fn map_in_place(v: &mut [f32], f: impl Fn(f32) -> f32) {
    struct Map<'a, F>(&'a mut [f32], F);
    impl<F: Fn(f32) -> f32> WithSimd for Map<'_, F> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) {
            let Map(v, f) = self;
            v.iter_mut().for_each(|v| *v = f(*v));
        }
    }
    dispatch(Map(v, f));
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `n` values in [-1, 1] from `seed`, the same for the same arguments.
    pub(in crate::model) fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                let h = (i ^ seed).wrapping_mul(2_654_435_761).rotate_left(13);
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn kernels_equal_the_scalar_product_on_awkward_shapes() {
        // Rows not a multiple of any tile height, outputs not a multiple of a panel, inputs
        // over one block and not a multiple of it.
        for (m, out, inp) in [
            (1, 32, 8),
            (13, 70, 300),
            (97, 33, 513),
            (8, 64, 256),
            (6, 96, 40),
            (7, 32, 3),
        ] {
            let w = Packed::new(&values(out * inp, 1), out, inp);
            let x = values(m * inp, 2);
            let start = values(m * out, 3);
            let (mut fast, mut slow) = (start.clone(), start);
            w.mul_add(&x, &mut fast);
            w.mul_add_scalar(&x, &mut slow);
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a - b).abs() < 1e-3,
                    "{m}×{inp}·{inp}×{out}: {a} against {b}"
                );
            }
            assert!(fast.iter().any(|v| v.abs() > 1.0));
        }
    }
}
