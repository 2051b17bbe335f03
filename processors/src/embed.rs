//! The deterministic local embedder: feature hashing of words and word pairs into a dense
//! vector (signed buckets, L2-normalised) plus a sparse term vector for keyword search. No
//! model, no network, no randomness: the same text gives the same vectors on every machine,
//! so a rebuilt collection equals the live one.

/// Model id written to payloads and collection metadata.
pub const HASH_MODEL: &str = "kledger-hash-v1";
/// Default dense dimension.
pub const HASH_DIM_DEFAULT: usize = 256;
/// Words of a text that are embedded at most (bounds the work per text).
pub const WORDS_MAX: usize = 2_048;

/// A sparse vector: strictly increasing indices and their weights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sparse {
    /// Indices.
    pub indices: Vec<u32>,
    /// Weights.
    pub values: Vec<f32>,
}

/// Dense and sparse vectors of one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// Dense, L2-normalised (all zeros for a text without words).
    pub dense: Vec<f32>,
    /// Sparse term weights (1 + ln tf per word).
    pub sparse: Sparse,
}

/// FNV-1a, 64 bits: a fixed, portable hash.
fn fnv(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Lower-cased alphanumeric words of `text`, at most [`WORDS_MAX`].
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(WORDS_MAX)
        .map(str::to_lowercase)
        .collect()
}

/// The feature-hashing embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashEmbedder {
    /// Dense dimension.
    pub dim: usize,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        Self {
            dim: HASH_DIM_DEFAULT,
        }
    }
}

impl HashEmbedder {
    /// Embeds `text`.
    pub fn embed(&self, text: &str) -> Embedded {
        let ws = words(text);
        Embedded {
            dense: self.dense_of(&ws),
            sparse: sparse_of(&ws),
        }
    }

    /// Only the sparse term vector of `text` (what `embed(text).sparse` gives, without the
    /// dense work).
    pub fn sparse(&self, text: &str) -> Sparse {
        sparse_of(&words(text))
    }

    /// Only the dense vector of `text` (what `embed(text).dense` gives).
    pub fn dense(&self, text: &str) -> Vec<f32> {
        self.dense_of(&words(text))
    }

    fn dense_of(&self, ws: &[String]) -> Vec<f32> {
        let dim = self.dim.max(1);
        let mut dense = vec![0f32; dim];
        let mut add = |feature: &[u8], weight: f32| {
            let h = fnv(feature, 0);
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            dense[(h % dim as u64) as usize] += sign * weight;
        };
        for w in ws {
            add(w.as_bytes(), 1.0);
        }
        for pair in ws.windows(2) {
            add(format!("{} {}", pair[0], pair[1]).as_bytes(), 0.5);
        }
        let norm = dense.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            dense.iter_mut().for_each(|x| *x /= norm);
        }
        dense
    }
}

/// Term weights (1 + ln tf) by hashed term, indices strictly increasing.
fn sparse_of(ws: &[String]) -> Sparse {
    let mut terms: Vec<u32> = ws
        .iter()
        .map(|w| (fnv(w.as_bytes(), 0x9e37_79b9) >> 32) as u32)
        .collect();
    terms.sort_unstable();
    let mut sparse = Sparse::default();
    for t in terms {
        if sparse.indices.last() == Some(&t) {
            if let Some(v) = sparse.values.last_mut() {
                *v += 1.0;
            }
        } else {
            sparse.indices.push(t);
            sparse.values.push(1.0);
        }
    }
    sparse.values.iter_mut().for_each(|tf| *tf = 1.0 + tf.ln());
    sparse
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_vectors_and_related_texts_are_closer() {
        let e = HashEmbedder::default();
        let a = e.embed("Lives in Lisbon, Portugal");
        assert_eq!(a, e.embed("lives in LISBON portugal"));
        let cos = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>();
        let near = e.embed("moved to Lisbon");
        let far = e.embed("weekly status report for the data team");
        assert!(cos(&a.dense, &near.dense) > cos(&a.dense, &far.dense));
        assert!((cos(&a.dense, &a.dense) - 1.0).abs() < 1e-5);
        assert!(a.sparse.indices.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a.sparse.indices.len(), 4);
        assert_eq!(e.sparse("Lives in Lisbon, Portugal"), a.sparse);
        assert_eq!(e.dense("Lives in Lisbon, Portugal"), a.dense);
    }

    #[test]
    fn empty_text_gives_zero_vectors() {
        let e = HashEmbedder { dim: 8 };
        let v = e.embed(" ,;");
        assert_eq!(v.dense, vec![0.0; 8]);
        assert!(v.sparse.indices.is_empty());
    }
}
