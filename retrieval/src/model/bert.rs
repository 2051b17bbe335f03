//! The BERT encoder's forward pass on the CPU (f32; the linear layers' products in f32 or
//! int8), as Hugging Face's `BertModel` computes it for sentence embeddings: word + position + token-type embeddings and a LayerNorm, then per
//! layer self-attention and a GELU (erf) feed-forward block, each added back and normalised
//! (post-LN). Sequences of a batch are not padded: every linear layer is one matrix product
//! over all the batch's tokens, and attention runs per sequence on its own tokens.

use ndarray::Array2;

use super::{ModelError, Precision};
use pulp::{Simd, WithSimd};

use super::gemm::{Packed, combine_rows, dispatch, lanes, map_in_place, moments};
use super::int8::Quantized;
use super::safetensors::Tensors;

/// The encoder's shape (a `config.json`'s fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct Shape {
    /// Hidden size (the embedding's dimension).
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads.
    pub num_attention_heads: usize,
    /// The feed-forward block's inner size.
    pub intermediate_size: usize,
    /// Positions (the longest sequence).
    pub max_position_embeddings: usize,
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
}

/// LayerNorm's epsilon in BERT.
const LN_EPS: f32 = 1e-12;

/// A linear layer's weights, in the precision its products run in.
#[derive(Debug)]
enum Weights {
    F32(Packed),
    Int8(Quantized),
}

#[derive(Debug)]
struct Linear {
    w: Weights,
    b: Vec<f32>,
}

impl Linear {
    fn load(
        t: &Tensors<'_>,
        name: &str,
        out: usize,
        inp: usize,
        precision: Precision,
    ) -> Result<Self, ModelError> {
        Self::stacked(t, &[name], out, inp, precision)
    }

    /// Layers of the same input stacked into one product (query, key and value: `[3h, h]`).
    fn stacked(
        t: &Tensors<'_>,
        names: &[impl AsRef<str>],
        out: usize,
        inp: usize,
        precision: Precision,
    ) -> Result<Self, ModelError> {
        let (mut w, mut b) = (Vec::new(), Vec::new());
        for name in names {
            let name = name.as_ref();
            w.extend(t.matrix(&format!("{name}.weight"), out, inp)?.iter());
            b.extend(t.vector(&format!("{name}.bias"), out)?);
        }
        let out = names.len() * out;
        let w = match precision {
            Precision::F32 => Weights::F32(Packed::new(&w, out, inp)),
            Precision::Int8 => Weights::Int8(Quantized::new(&w, out, inp)),
        };
        Ok(Self { w, b })
    }

    /// `x · wᵀ + b`.
    fn forward(&self, x: &Array2<f32>) -> Array2<f32> {
        // Every row starts as the bias (written once: no zeroing first).
        let mut y = Vec::with_capacity(x.nrows() * self.b.len());
        for _ in 0..x.nrows() {
            y.extend_from_slice(&self.b);
        }
        let mut y = Array2::from_shape_vec((x.nrows(), self.b.len()), y).expect("rows of the bias");
        let (x, out) = (
            x.as_slice().expect("standard layout"),
            y.as_slice_mut().expect("standard layout"),
        );
        match &self.w {
            Weights::F32(w) => w.mul_add(x, out),
            Weights::Int8(w) => w.mul_add(x, out),
        }
        y
    }
}

#[derive(Debug)]
struct LayerNorm {
    g: Vec<f32>,
    b: Vec<f32>,
}

impl LayerNorm {
    fn load(t: &Tensors<'_>, name: &str, h: usize) -> Result<Self, ModelError> {
        Ok(Self {
            g: t.vector(&format!("{name}.weight"), h)?,
            b: t.vector(&format!("{name}.bias"), h)?,
        })
    }

    /// Normalises every row of `x` in place.
    fn apply(&self, x: &mut Array2<f32>) {
        struct Norm<'a>(&'a LayerNorm, &'a mut [f32]);
        impl WithSimd for Norm<'_> {
            type Output = ();
            #[inline(always)]
            fn with_simd<S: Simd>(self, simd: S) {
                let Norm(ln, x) = self;
                for r in x.chunks_exact_mut(ln.g.len()) {
                    let n = r.len() as f32;
                    // The mean first, then the squares about it (not about zero: a row far
                    // from zero would lose the variance to cancellation).
                    let mean = moments(simd, r, 0.0).0 / n;
                    let var = moments(simd, r, mean).1 / n;
                    let inv = 1.0 / (var + LN_EPS).sqrt();
                    for ((v, g), b) in r.iter_mut().zip(&ln.g).zip(&ln.b) {
                        *v = (*v - mean) * inv * g + b;
                    }
                }
            }
        }
        dispatch(Norm(self, x.as_slice_mut().expect("standard layout")));
    }
}

#[derive(Debug)]
struct Layer {
    qkv: Linear,
    out: Linear,
    ln1: LayerNorm,
    up: Linear,
    down: Linear,
    ln2: LayerNorm,
}

/// The encoder's weights.
#[derive(Debug)]
pub struct Bert {
    shape: Shape,
    word: Array2<f32>,
    position: Array2<f32>,
    token_type: Vec<f32>,
    ln: LayerNorm,
    layers: Vec<Layer>,
}

impl Bert {
    /// The encoder of `shape` from a safetensors file's tensors (Hugging Face `BertModel`
    /// names, with or without the `bert.` prefix), its linear layers' products in `precision`.
    pub fn load(shape: Shape, t: &Tensors<'_>, precision: Precision) -> Result<Self, ModelError> {
        let h = shape.hidden_size;
        if shape.num_attention_heads == 0 || !h.is_multiple_of(shape.num_attention_heads) {
            return Err(ModelError::Shape(format!(
                "hidden size {h} is not a multiple of {} heads",
                shape.num_attention_heads
            )));
        }
        let i = shape.intermediate_size;
        let mut layers = Vec::with_capacity(shape.num_hidden_layers);
        for l in 0..shape.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let qkv = Linear::stacked(
                t,
                &["query", "key", "value"].map(|w| format!("{p}.attention.self.{w}")),
                h,
                h,
                precision,
            )?;
            let linear =
                |name: &str, out, inp| Linear::load(t, &format!("{p}.{name}"), out, inp, precision);
            layers.push(Layer {
                qkv,
                out: linear("attention.output.dense", h, h)?,
                ln1: LayerNorm::load(t, &format!("{p}.attention.output.LayerNorm"), h)?,
                up: linear("intermediate.dense", i, h)?,
                down: linear("output.dense", h, i)?,
                ln2: LayerNorm::load(t, &format!("{p}.output.LayerNorm"), h)?,
            });
        }
        let token_types = t.matrix("embeddings.token_type_embeddings.weight", 2, h)?;
        Ok(Self {
            shape,
            word: t.matrix("embeddings.word_embeddings.weight", shape.vocab_size, h)?,
            position: t.matrix(
                "embeddings.position_embeddings.weight",
                shape.max_position_embeddings,
                h,
            )?,
            token_type: token_types.row(0).to_vec(),
            ln: LayerNorm::load(t, "embeddings.LayerNorm", h)?,
            layers,
        })
    }

    /// The encoder's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Mean-pooled, L2-normalised embeddings of token sequences (each at most
    /// `max_position_embeddings` long, ids below `vocab_size`: the tokenizer's output).
    pub fn embed(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let h = self.shape.hidden_size;
        let n: usize = seqs.iter().map(Vec::len).sum();
        if n == 0 {
            return seqs.iter().map(|_| vec![0.0; h]).collect();
        }
        let mut x = Array2::<f32>::zeros((n, h));
        let mut at = 0;
        for seq in seqs {
            for (pos, &id) in seq.iter().enumerate() {
                let mut row = x.row_mut(at);
                let r = row.as_slice_mut().expect("standard layout");
                let word = self.word.row(id as usize);
                let position = self.position.row(pos);
                for (j, v) in r.iter_mut().enumerate() {
                    *v = word[j] + position[j] + self.token_type[j];
                }
                at += 1;
            }
        }
        self.ln.apply(&mut x);
        for layer in &self.layers {
            self.layer(layer, seqs, &mut x);
        }
        let mut out = Vec::with_capacity(seqs.len());
        let mut at = 0;
        for seq in seqs {
            let mut v = vec![0f32; h];
            for t in at..at + seq.len() {
                for (acc, x) in v.iter_mut().zip(x.row(t)) {
                    *acc += x;
                }
            }
            at += seq.len();
            let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|a| *a /= norm);
            }
            out.push(v);
        }
        out
    }

    fn layer(&self, l: &Layer, seqs: &[Vec<u32>], x: &mut Array2<f32>) {
        let h = self.shape.hidden_size;
        let heads = self.shape.num_attention_heads;
        let scale = 1.0 / ((h / heads) as f32).sqrt();
        let qkv = l.qkv.forward(x);
        let mut ctx = Array2::<f32>::zeros((x.nrows(), h));
        dispatch(Attend {
            qkv: qkv.as_slice().expect("standard layout"),
            ctx: ctx.as_slice_mut().expect("standard layout"),
            seqs,
            h,
            heads,
            scale,
        });
        let mut attended = l.out.forward(&ctx);
        attended += &*x;
        l.ln1.apply(&mut attended);
        let mut inner = l.up.forward(&attended);
        map_in_place(inner.as_slice_mut().expect("standard layout"), gelu);
        let mut y = l.down.forward(&inner);
        y += &attended;
        l.ln2.apply(&mut y);
        *x = y;
    }
}

/// Self-attention of every sequence on its own tokens, head by head: `ctx` (zeroed, `h` wide)
/// gets `softmax(q·kᵀ·scale)·v` from `qkv`, whose row t is t's query, key and value side by
/// side (3h wide; a head's part of each is its d columns).
struct Attend<'a> {
    qkv: &'a [f32],
    ctx: &'a mut [f32],
    seqs: &'a [Vec<u32>],
    h: usize,
    heads: usize,
    scale: f32,
}

impl WithSimd for Attend<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Attend {
            qkv,
            ctx,
            seqs,
            h,
            heads,
            scale,
        } = self;
        let d = h / heads;
        // A head's keys transposed, d rows of the sequence's keys (padded to whole vectors
        // with zeros), so that a query's scores against every key are d multiply-adds of
        // whole vectors rather than one reduction per key.
        let mut keys: Vec<f32> = Vec::new();
        let (mut scores, mut query): (Vec<f32>, Vec<f32>) = (Vec::new(), Vec::new());
        let mut start = 0;
        for seq in seqs {
            let len = seq.len();
            let wide = len.next_multiple_of(lanes::<S>());
            for head in 0..heads {
                let block = Block {
                    qkv,
                    h,
                    d,
                    head,
                    start,
                    len,
                    wide,
                    scale,
                };
                keys.clear();
                keys.resize(d * wide, 0.0);
                for j in 0..len {
                    for (c, k) in block.row(j, 1).iter().enumerate() {
                        keys[c * wide + j] = *k;
                    }
                }
                let mut i = 0;
                while i < len {
                    let n = (len - i).min(QUERIES);
                    let buffers = (&keys[..], &mut scores, &mut query);
                    match n {
                        4.. => block.run::<S, 4>(simd, i, buffers, ctx),
                        3 => block.run::<S, 3>(simd, i, buffers, ctx),
                        2 => block.run::<S, 2>(simd, i, buffers, ctx),
                        _ => block.run::<S, 1>(simd, i, buffers, ctx),
                    }
                    i += n;
                }
            }
            start += len;
        }
    }
}

/// Queries of a head attended together (their sums are independent chains; see
/// [`combine_rows`]).
const QUERIES: usize = 4;

/// One head of one sequence: what a block of its queries needs.
struct Block<'a> {
    qkv: &'a [f32],
    h: usize,
    d: usize,
    head: usize,
    start: usize,
    len: usize,
    wide: usize,
    scale: f32,
}

impl Block<'_> {
    /// Token `t`'s query (`which` 0), key (1) or value (2) in this head.
    #[inline(always)]
    fn row(&self, t: usize, which: usize) -> &[f32] {
        let at = (self.start + t) * 3 * self.h + which * self.h + self.head * self.d;
        &self.qkv[at..at + self.d]
    }

    /// Queries `i .. i + R`: their scores against every key (`keys`, the head's keys
    /// transposed; `scores`, R rows of `wide`), softmax, and the weighted values into their
    /// rows of `ctx`.
    #[inline(always)]
    fn run<S: Simd, const R: usize>(
        &self,
        simd: S,
        i: usize,
        (keys, scores, query): (&[f32], &mut Vec<f32>, &mut Vec<f32>),
        ctx: &mut [f32],
    ) {
        let Block {
            h,
            d,
            head,
            start,
            len,
            wide,
            scale,
            ..
        } = *self;
        query.clear();
        for r in 0..R {
            query.extend(self.row(i + r, 0).iter().map(|q| q * scale));
        }
        scores.clear();
        scores.resize(R * wide, 0.0);
        let outs: [&mut [f32]; R] = scores
            .get_disjoint_mut(std::array::from_fn(|r| r * wide..(r + 1) * wide))
            .expect("disjoint rows");
        combine_rows(
            simd,
            std::array::from_fn(|r| &query[r * d..(r + 1) * d]),
            |c| &keys[c * wide..],
            outs,
        );
        for r in 0..R {
            softmax(simd, &mut scores[r * wide..r * wide + len]);
        }
        let outs: [&mut [f32]; R] = ctx
            .get_disjoint_mut(std::array::from_fn(|r| {
                let at = (start + i + r) * h + head * d;
                at..at + d
            }))
            .expect("disjoint rows");
        combine_rows(
            simd,
            std::array::from_fn(|r| &scores[r * wide..r * wide + len]),
            |j| self.row(j, 2),
            outs,
        );
    }
}

/// `v` in place of its softmax, the maximum and the sum in vector lanes (a scalar fold of
/// either is a chain of dependent steps).
#[inline(always)]
fn softmax<S: Simd>(simd: S, v: &mut [f32]) {
    let (head, tail) = S::as_simd_f32s(v);
    let mut lanes = simd.splat_f32s(f32::NEG_INFINITY);
    for x in head {
        lanes = simd.max_f32s(lanes, *x);
    }
    let max = tail
        .iter()
        .fold(simd.reduce_max_f32s(lanes), |m, a| m.max(*a));
    v.iter_mut().for_each(|a| *a = exp(*a - max));
    let (head, tail) = S::as_simd_f32s(v);
    let mut lanes = simd.splat_f32s(0.0);
    for x in head {
        lanes = simd.add_f32s(lanes, *x);
    }
    let sum = tail.iter().fold(simd.reduce_sum_f32s(lanes), |s, a| s + a);
    let inv = 1.0 / sum;
    v.iter_mut().for_each(|a| *a *= inv);
}

/// `eˣ` for `x ≤ 0` in single precision without a branch or a call, so that a loop of it
/// vectorises: `2ⁿ · eʳ` with `n = round(x / ln 2)`, `r = x − n·ln 2` (in two parts) and
/// Cephes' degree-5 polynomial for `eʳ` on |r| ≤ ln 2 / 2. Below −87 (where `eˣ` leaves f32's
/// normal range) it is `e⁻⁸⁷`, about 1.6e-38, which adds nothing to a softmax's sum. Within 2 ulp of the exact function (the test checks a dense grid).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.max(-87.0);
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = n.mul_add(-0.693_359_4, x);
    let r = n.mul_add(2.121_944_4e-4, r);
    let p = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        5e-1,
    ]
    .iter()
    .fold(0.0f32, |acc, c| acc.mul_add(r, *c));
    let e = p.mul_add(r * r, r + 1.0);
    // 2ⁿ from its exponent bits (n ≥ −126 here, so 2ⁿ is normal).
    e * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// GELU in its exact (erf) form, as BERT's `gelu`.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function in single precision without a branch or a call, so that a loop of it
/// vectorises: a rational minimax fit over [-4, 4] (outside it erf is ±1 in f32), the one
/// Eigen and XLA use. Within 1e-6 of the exact function (the test checks a dense grid).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ]
    .iter()
    .fold(0.0f32, |acc, c| acc * x2 + c);
    let q = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_474e-2,
    ]
    .iter()
    .fold(0.0f32, |acc, c| acc * x2 + c);
    x * p / q
}

#[cfg(test)]
mod tests {
    #[test]
    fn erf_is_within_a_millionth_of_the_exact_function() {
        let mut worst = 0f32;
        for i in -600_000..=600_000 {
            let x = i as f32 * 1e-5;
            worst = worst.max((super::erf(x) - libm::erff(x)).abs());
        }
        assert!(worst < 1e-6, "{worst}");
        assert!((super::erf(-1e30) + 1.0).abs() < 1e-6);
        assert!((super::erf(f32::INFINITY) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn exp_is_within_two_ulp_of_the_exact_function() {
        let mut worst = 0f32;
        for i in 0..=8_700_000 {
            let x = -(i as f32) * 1e-5;
            let (got, want) = (super::exp(x), x.exp());
            worst = worst.max((got - want).abs() / want.max(f32::MIN_POSITIVE));
        }
        assert!(worst < 2.0 * f32::EPSILON, "{worst}");
        assert!(super::exp(-1e30) < 1e-37 && super::exp(f32::NEG_INFINITY) < 1e-37);
        assert_eq!(super::exp(0.0), 1.0);
    }
}
