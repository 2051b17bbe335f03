//! The safetensors format, read-only: an 8-byte little-endian header length, a JSON header
//! naming each tensor's dtype, shape and byte range, then the data. Only F32 tensors are read.

use std::collections::BTreeMap;

use ndarray::Array2;
use serde::Deserialize;

use super::ModelError;

#[derive(Debug, Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// The tensors of a safetensors file, borrowed from its bytes.
#[derive(Debug)]
pub struct Tensors<'a> {
    entries: BTreeMap<String, Entry>,
    data: &'a [u8],
    /// `bert.` when the names carry it (a `BertForMaskedLM`-style export).
    prefix: &'static str,
}

impl<'a> Tensors<'a> {
    /// Parses the header of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ModelError> {
        let bad = |m: &str| ModelError::Weights(m.to_owned());
        let len_bytes: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("shorter than its header"))?;
        let len =
            usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| bad("header length"))?;
        let header = bytes
            .get(8..8usize.saturating_add(len))
            .ok_or_else(|| bad("header past the end"))?;
        let mut raw: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(header).map_err(|e| bad(&format!("header: {e}")))?;
        raw.remove("__metadata__");
        let mut entries = BTreeMap::new();
        for (name, v) in raw {
            let e: Entry =
                serde_json::from_value(v).map_err(|e| bad(&format!("tensor {name}: {e}")))?;
            entries.insert(name, e);
        }
        let prefix = if entries.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        Ok(Self {
            entries,
            data: &bytes[8 + len..],
            prefix,
        })
    }

    fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let e = self
            .entries
            .get(&full)
            .ok_or_else(|| ModelError::Weights(format!("no tensor {full}")))?;
        if e.dtype != "F32" || e.shape != shape {
            return Err(ModelError::Weights(format!(
                "tensor {full} is {} {:?}, expected F32 {shape:?}",
                e.dtype, e.shape
            )));
        }
        let [start, end] = e.data_offsets;
        let count: usize = shape.iter().product();
        let bytes = self
            .data
            .get(start..end)
            .filter(|b| b.len() == count * 4)
            .ok_or_else(|| ModelError::Weights(format!("tensor {full}: data range")))?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// A `[rows, cols]` F32 tensor.
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, ModelError> {
        let v = self.f32s(name, &[rows, cols])?;
        Array2::from_shape_vec((rows, cols), v).map_err(|e| ModelError::Weights(e.to_string()))
    }

    /// A `[len]` F32 tensor.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>, ModelError> {
        self.f32s(name, &[len])
    }
}
