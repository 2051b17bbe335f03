//! Writes the bundled migration fixture, `examples/migration/legacy.jsonl` (10,000 legacy
//! memory rows over 400 accounts): `cargo run -p kledger-testkit --example legacy_fixture`.

use std::io::Write;

fn main() -> std::io::Result<()> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/migration/legacy.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
    for line in kledger_testkit::legacy::lines(kledger_testkit::legacy::LEGACY_SEED, 10_000, 400) {
        writeln!(f, "{line}")?;
    }
    f.flush()?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
