//! `harness [short|long] [--kledger PATH] [--only crash,early,faults,bad,access,soak] [--seed N]`:
//! runs the reliability harness and prints its summary table; exits 1 when a check fails. The
//! `kledger` binary defaults to the one next to this program (`cargo build -p
//! kledger-topology --bin kledger` first); `--seed` replaces the profile's seed.
//!
//! With `RUST_LOG` set (e.g. `RUST_LOG=kledger_topology=debug`), the checks that run kledger
//! in this process (`faults`, `access`) log to stderr; the others' `kledger` processes log as
//! configured.

fn main() -> anyhow::Result<()> {
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut profile = match args.first().map(String::as_str) {
        Some("long") => kledger_testkit::harness::LONG,
        _ => kledger_testkit::harness::SHORT,
    };
    if let Some(i) = args.iter().position(|a| a == "--seed") {
        let seed = args.get(i + 1).map(|s| s.parse::<u64>());
        let Some(Ok(seed)) = seed else {
            anyhow::bail!("--seed needs a number");
        };
        profile.seed = seed;
    }
    let bin = match args.iter().position(|a| a == "--kledger") {
        Some(i) => std::path::PathBuf::from(&args[i + 1]),
        None => std::env::current_exe()?.with_file_name("kledger"),
    };
    anyhow::ensure!(bin.exists(), "no kledger binary at {}", bin.display());
    let started = std::time::Instant::now();
    let only: Vec<&str> = match args.iter().position(|a| a == "--only") {
        Some(i) => args[i + 1].split(',').collect(),
        None => kledger_testkit::harness::CHECKS.to_vec(),
    };
    let summary = kledger_testkit::harness::run_only(&profile, &bin, &only)?;
    println!(
        "kledger reliability harness, profile {}, seed {} ({:.0} s)\n\n{summary}",
        profile.name,
        profile.seed,
        started.elapsed().as_secs_f64()
    );
    if !summary.ok() {
        std::process::exit(1);
    }
    Ok(())
}
