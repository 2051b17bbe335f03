//! A local sentence-embedding model of the BERT family (the embedded default is
//! all-MiniLM-L6-v2): the WordPiece tokenizer ([`wordpiece`]), the encoder's forward pass on
//! the CPU ([`bert`]), mean pooling and L2 normalisation, as sentence-transformers computes it.
//! Pure: the weights, vocabulary and configuration come in as bytes (the runner reads and
//! checks the files), and the same text gives the same vector on the same machine.
//!
//! May not touch: files, threads (the runner splits batches over its threads), the network.

pub mod bert;
mod gemm;
mod int8;
mod safetensors;
pub mod wordpiece;

/// Tokens of one text embedded at most, `[CLS]` and `[SEP]` included (sentence-transformers'
/// `max_seq_length` for this model family); the rest of a longer text is not embedded.
pub const SEQ_TOKENS_MAX: usize = 256;
/// Tokens one forward pass takes at most (bounds its activations: a few MiB per thousand).
pub const PASS_TOKENS_MAX: usize = 256;

/// What the linear layers' matrix products compute in (the rest of the forward pass is f32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single-precision floats: the reference's vectors to float rounding.
    F32,
    /// Eight-bit integers, dynamically quantised (weights per output, inputs per row; see
    /// `int8`): about twice as fast on a CPU with AVX-512 VNNI, vectors within about 1% of
    /// the reference's (cosine); the same vectors on every CPU.
    #[default]
    Int8,
}

/// Whether this CPU runs [`Precision::Int8`]'s products on its vector kernel (AVX-512 VNNI);
/// without it they run as plain integer loops, to the same vectors, several times slower.
pub fn int8_kernel() -> bool {
    int8::vnni()
}

/// Why a model did not load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The weights file is not safetensors with the tensors the configuration implies.
    #[error("model weights: {0}")]
    Weights(String),
    /// The vocabulary lacks a special token or does not match the configuration.
    #[error("model vocabulary: {0}")]
    Vocab(String),
    /// The configuration is not a BERT encoder's.
    #[error("model configuration: {0}")]
    Shape(String),
}

/// A loaded sentence-embedding model.
#[derive(Debug)]
pub struct SentenceModel {
    bert: bert::Bert,
    vocab: wordpiece::WordPiece,
}

impl SentenceModel {
    /// The model of a `model.safetensors` file's bytes, a `vocab.txt` and a `config.json`, its
    /// products in f32 (the reference's vectors).
    pub fn load(weights: &[u8], vocab: &str, config_json: &str) -> Result<Self, ModelError> {
        Self::load_with(weights, vocab, config_json, Precision::F32)
    }

    /// [`SentenceModel::load`] with the products in `precision`.
    pub fn load_with(
        weights: &[u8],
        vocab: &str,
        config_json: &str,
        precision: Precision,
    ) -> Result<Self, ModelError> {
        let shape: bert::Shape = serde_json::from_str(config_json)
            .map_err(|e| ModelError::Shape(format!("config.json: {e}")))?;
        if shape.max_position_embeddings < SEQ_TOKENS_MAX {
            return Err(ModelError::Shape(format!(
                "{} positions, fewer than the {SEQ_TOKENS_MAX} tokens a text is cut to",
                shape.max_position_embeddings
            )));
        }
        let vocab = wordpiece::WordPiece::from_vocab(vocab)?;
        if vocab.len() != shape.vocab_size {
            return Err(ModelError::Vocab(format!(
                "{} tokens, the configuration says {}",
                vocab.len(),
                shape.vocab_size
            )));
        }
        let tensors = safetensors::Tensors::parse(weights)?;
        let bert = bert::Bert::load(shape, &tensors, precision)?;
        Ok(Self { bert, vocab })
    }

    /// The embeddings' dimension.
    pub fn dim(&self) -> usize {
        self.bert.shape().hidden_size
    }

    /// The token ids `text` is embedded from (at most [`SEQ_TOKENS_MAX`]).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.vocab.encode(text, SEQ_TOKENS_MAX)
    }

    /// One unit vector per text, in order, on the calling thread. Texts are grouped by length
    /// into passes of at most [`PASS_TOKENS_MAX`] tokens; the grouping does not change a
    /// text's vector beyond float rounding.
    pub fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let seqs: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens(t)).collect();
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|i| seqs[*i].len());
        let mut out = vec![Vec::new(); seqs.len()];
        let mut pass: Vec<usize> = Vec::new();
        let mut tokens = 0;
        let mut run = |pass: &mut Vec<usize>| {
            let batch: Vec<Vec<u32>> = pass.iter().map(|i| seqs[*i].clone()).collect();
            for (i, v) in pass.drain(..).zip(self.bert.embed(&batch)) {
                out[i] = v;
            }
        };
        for i in order {
            let len = seqs[i].len();
            if tokens + len > PASS_TOKENS_MAX && !pass.is_empty() {
                run(&mut pass);
                tokens = 0;
            }
            pass.push(i);
            tokens += len;
        }
        if !pass.is_empty() {
            run(&mut pass);
        }
        out
    }
}
