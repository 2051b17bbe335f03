//! BERT's uncased WordPiece tokenizer for all-MiniLM-L6-v2, on Hugging Face's `tokenizers`:
//! `BertNormalizer` (clean the text, spaces around CJK ideographs, strip accents, lowercase),
//! `BertPreTokenizer` (split on whitespace and punctuation) and `WordPiece` (greedy
//! longest-match with `##` continuations; a word of more than 100 characters, or one no piece
//! sequence covers, is `[UNK]`). The output is `[CLS] … [SEP]`, truncated to a maximum length
//! as the model's `BertProcessing` with truncation makes it. Built from the model's `vocab.txt`
//! (the package ships no `tokenizer.json`); held to the reference ids by
//! `retrieval/tests/model.rs`.

use tokenizers::models::wordpiece::WordPiece as Model;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::{Model as _, Tokenizer};

use super::ModelError;

/// Characters of a word WordPiece splits at most (longer words are `[UNK]`).
const WORD_CHARS_MAX: usize = 100;

/// A WordPiece tokenizer and its special tokens.
#[derive(Clone)]
pub struct WordPiece {
    tokenizer: Tokenizer,
    cls: u32,
    sep: u32,
}

impl std::fmt::Debug for WordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordPiece")
            .field("tokens", &self.len())
            .finish_non_exhaustive()
    }
}

impl WordPiece {
    /// The tokenizer of a `vocab.txt` (one token per line, id = line number).
    pub fn from_vocab(vocab: &str) -> Result<Self, ModelError> {
        let ids: ahash::AHashMap<String, u32> = vocab
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_owned(), i as u32))
            .collect();
        let special = |t: &str| {
            ids.get(t)
                .copied()
                .ok_or_else(|| ModelError::Vocab(format!("no {t} token")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        special("[UNK]")?;
        let model = Model::builder()
            .vocab(ids)
            .unk_token("[UNK]".into())
            .continuing_subword_prefix("##".into())
            .max_input_chars_per_word(WORD_CHARS_MAX)
            .build()
            .map_err(|e| ModelError::Vocab(e.to_string()))?;
        let mut tokenizer = Tokenizer::new(model);
        // clean_text, handle_chinese_chars, strip_accents (with lowercase), lowercase.
        tokenizer.with_normalizer(Some(BertNormalizer::new(true, true, None, true)));
        tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
        Ok(Self {
            tokenizer,
            cls,
            sep,
        })
    }

    /// Tokens in the vocabulary.
    pub fn len(&self) -> usize {
        self.tokenizer.get_model().get_vocab_size()
    }

    /// Whether the vocabulary is empty (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of `text`: `[CLS]`, its word pieces (at most `len_max - 2`), `[SEP]`.
    pub fn encode(&self, text: &str, len_max: usize) -> Vec<u32> {
        let pieces_max = len_max.saturating_sub(2);
        let mut out = Vec::with_capacity(16);
        out.push(self.cls);
        // The normalizer, pre-tokenizer and model cannot fail on a `&str`; were one ever to,
        // the text embeds as empty rather than stopping the sink.
        if let Ok(e) = self.tokenizer.encode_fast(text, false) {
            out.extend(e.get_ids().iter().take(pieces_max));
        }
        out.push(self.sep);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        WordPiece::from_vocab("[PAD]\n[UNK]\n[CLS]\n[SEP]\nlive\n##s\nin\nporto\n,\ncafe\n")
            .unwrap()
    }

    #[test]
    fn pieces_punctuation_accents_and_unknowns() {
        let v = vocab();
        assert_eq!(v.len(), 10);
        assert_eq!(v.encode("Lives in Porto", 16), vec![2, 4, 5, 6, 7, 3]);
        assert_eq!(v.encode("café,porto", 16), vec![2, 9, 8, 7, 3]);
        assert_eq!(v.encode("zebra", 16), vec![2, 1, 3]);
        assert_eq!(v.encode("", 16), vec![2, 3]);
        // Truncated to the length, [SEP] kept.
        assert_eq!(v.encode("in in in in", 4), vec![2, 6, 6, 3]);
        assert_eq!(v.encode(&"x".repeat(WORD_CHARS_MAX + 1), 16), vec![2, 1, 3]);
    }

    #[test]
    fn a_vocabulary_without_its_special_tokens_is_refused() {
        for missing in ["[UNK]", "[CLS]", "[SEP]"] {
            let v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nin\n".replace(&format!("{missing}\n"), "");
            let e = WordPiece::from_vocab(&v).unwrap_err();
            assert_eq!(e, ModelError::Vocab(format!("no {missing} token")));
        }
    }
}
