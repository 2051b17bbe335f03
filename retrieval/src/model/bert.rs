//! The BERT encoder's forward pass on the CPU (f32), as Hugging Face's `BertModel` computes it
//! for sentence embeddings: word + position + token-type embeddings and a LayerNorm, then per
//! layer self-attention and a GELU (erf) feed-forward block, each added back and normalised
//! (post-LN). Sequences of a batch are not padded: every linear layer is one matrix product
//! over all the batch's tokens, and attention runs per sequence on its own tokens.

use ndarray::Array2;

use super::ModelError;
use super::gemm::{Packed, map_in_place};
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

#[derive(Debug)]
struct Linear {
    w: Packed,
    b: Vec<f32>,
}

impl Linear {
    fn load(t: &Tensors<'_>, name: &str, out: usize, inp: usize) -> Result<Self, ModelError> {
        Self::stacked(t, &[name], out, inp)
    }

    /// Layers of the same input stacked into one product (query, key and value: `[3h, h]`).
    fn stacked(
        t: &Tensors<'_>,
        names: &[impl AsRef<str>],
        out: usize,
        inp: usize,
    ) -> Result<Self, ModelError> {
        let (mut w, mut b) = (Vec::new(), Vec::new());
        for name in names {
            let name = name.as_ref();
            w.extend(t.matrix(&format!("{name}.weight"), out, inp)?.iter());
            b.extend(t.vector(&format!("{name}.bias"), out)?);
        }
        Ok(Self {
            w: Packed::new(&w, names.len() * out, inp),
            b,
        })
    }

    /// `x · wᵀ + b`.
    fn forward(&self, x: &Array2<f32>) -> Array2<f32> {
        let mut y = Array2::<f32>::zeros((x.nrows(), self.w.out()));
        for mut row in y.rows_mut() {
            row.as_slice_mut()
                .expect("standard layout")
                .copy_from_slice(&self.b);
        }
        self.w.mul_add(
            x.as_slice().expect("standard layout"),
            y.as_slice_mut().expect("standard layout"),
        );
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
        for mut row in x.rows_mut() {
            let r = row.as_slice_mut().expect("standard layout");
            let n = r.len() as f32;
            let mean = r.iter().sum::<f32>() / n;
            let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + LN_EPS).sqrt();
            for ((v, g), b) in r.iter_mut().zip(&self.g).zip(&self.b) {
                *v = (*v - mean) * inv * g + b;
            }
        }
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
    /// names, with or without the `bert.` prefix).
    pub fn load(shape: Shape, t: &Tensors<'_>) -> Result<Self, ModelError> {
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
            )?;
            layers.push(Layer {
                qkv,
                out: Linear::load(t, &format!("{p}.attention.output.dense"), h, h)?,
                ln1: LayerNorm::load(t, &format!("{p}.attention.output.LayerNorm"), h)?,
                up: Linear::load(t, &format!("{p}.intermediate.dense"), i, h)?,
                down: Linear::load(t, &format!("{p}.output.dense"), h, i)?,
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
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let qkv = l.qkv.forward(x);
        let qkv = qkv.as_slice().expect("standard layout");
        let mut ctx = Array2::<f32>::zeros((x.nrows(), h));
        let out = ctx.as_slice_mut().expect("standard layout");
        let mut scores = Vec::new();
        let mut start = 0;
        // Row t of `qkv` is t's query, key and value side by side (3h wide); a head's part of
        // each is its d columns.
        let part = |t: usize, which: usize, head: usize| {
            let at = t * 3 * h + which * h + head * d;
            &qkv[at..at + d]
        };
        for seq in seqs {
            let len = seq.len();
            for head in 0..heads {
                for i in start..start + len {
                    let qi = part(i, 0, head);
                    scores.clear();
                    scores.extend((start..start + len).map(|j| {
                        let kj = part(j, 1, head);
                        qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale
                    }));
                    softmax(&mut scores);
                    let o = &mut out[i * h + head * d..i * h + (head + 1) * d];
                    for (j, a) in (start..start + len).zip(&scores) {
                        for (o, v) in o.iter_mut().zip(part(j, 2, head)) {
                            *o += a * v;
                        }
                    }
                }
            }
            start += len;
        }
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

fn softmax(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for a in v.iter_mut() {
        *a = (*a - max).exp();
        sum += *a;
    }
    v.iter_mut().for_each(|a| *a /= sum);
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
}
