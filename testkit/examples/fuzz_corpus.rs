//! Writes seed inputs for the fuzz targets (`scripts/fuzz.sh`): generated intents, commits and
//! receipts as the codec encodes them; for `decide`, an 8-byte record time before each intent.
//!
//! `cargo run -p kledger-testkit --example fuzz_corpus -- DIR`

use kledger_schemas::avro::encode_single_object;
use kledger_testkit::{GenConfig, Generator, Ledger};

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz-corpus".into()),
    );
    let (codec, decide) = (dir.join("codec"), dir.join("decide"));
    std::fs::create_dir_all(&codec)?;
    std::fs::create_dir_all(&decide)?;
    let mut ledger = Ledger::new(4);
    for (i, r) in Generator::new(GenConfig {
        seed: 5,
        accounts: 10,
        ..GenConfig::default()
    })
    .take(200)
    .enumerate()
    {
        let bytes = encode_single_object(&r.intent);
        std::fs::write(codec.join(format!("intent-{i:03}")), &bytes)?;
        let mut with_time = r.timestamp.to_le_bytes().to_vec();
        with_time.extend_from_slice(&bytes);
        std::fs::write(decide.join(format!("intent-{i:03}")), with_time)?;
        let d = ledger.apply(&r);
        std::fs::write(
            codec.join(format!("receipt-{i:03}")),
            encode_single_object(&d.receipt),
        )?;
        if let Some(c) = d.commit() {
            std::fs::write(
                codec.join(format!("commit-{i:03}")),
                encode_single_object(c),
            )?;
        }
    }
    eprintln!("seed corpus written to {}", dir.display());
    Ok(())
}
