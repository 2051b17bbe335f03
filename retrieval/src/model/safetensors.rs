//! The model's weights, read with the `safetensors` crate (which checks the header, the dtypes
//! and that every tensor's bytes lie inside the file, without copying them). Only F32 tensors
//! are read; names may carry a `bert.` prefix (a `BertForMaskedLM`-style export).

use ndarray::Array2;
use safetensors::{Dtype, SafeTensors};

use super::ModelError;

/// The tensors of a safetensors file, borrowed from its bytes.
#[derive(Debug)]
pub struct Tensors<'a> {
    file: SafeTensors<'a>,
    /// `bert.` when the names carry it.
    prefix: &'static str,
}

impl<'a> Tensors<'a> {
    /// Parses the header of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ModelError> {
        let file =
            SafeTensors::deserialize(bytes).map_err(|e| ModelError::Weights(e.to_string()))?;
        let prefix = if file
            .tensor("bert.embeddings.word_embeddings.weight")
            .is_ok()
        {
            "bert."
        } else {
            ""
        };
        Ok(Self { file, prefix })
    }

    fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .file
            .tensor(&full)
            .map_err(|_| ModelError::Weights(format!("no tensor {full}")))?;
        if t.dtype() != Dtype::F32 || t.shape() != shape {
            return Err(ModelError::Weights(format!(
                "tensor {full} is {:?} {:?}, expected F32 {shape:?}",
                t.dtype(),
                t.shape()
            )));
        }
        Ok(t.data()
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
