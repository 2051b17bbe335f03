//! kledger's retrieval, below the runtime: the local sentence-embedding model of the BERT
//! family ([`model`]: the WordPiece tokenizer, the encoder's forward pass on the CPU, mean
//! pooling and L2 normalisation). Pure like the rules: the weights, vocabulary and
//! configuration come in as bytes, and the same text gives the same vector on the same machine.
//!
//! It is a crate of its own so that its optimised debug build (`opt-level = 3`: the tests and
//! the demo embed real rows) does not extend to the ledger's rules in `kledger-processors`.

pub mod model;
