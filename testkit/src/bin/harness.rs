//! `harness [short|long] [--kledger PATH] [--only crash,early,limits,faults,outage,bad,access,flood,hosts,soak] [--seed N]
//! [--soak-seconds N]`: runs the reliability harness and prints its summary table; exits 1 when
//! a check fails, 2 on an argument it does not know (`--help` prints this usage). The `kledger`
//! binary defaults to the one next to this program (`cargo build -p kledger-topology --bin
//! kledger` first); `--seed` replaces the profile's seed, `--soak-seconds` its soak's length.
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
    if let Some(unknown) = unknown_argument(&args) {
        eprintln!("{USAGE}");
        std::process::exit(if unknown == "--help" { 0 } else { 2 });
    }
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
    if let Some(i) = args.iter().position(|a| a == "--soak-seconds") {
        let seconds = args.get(i + 1).map(|s| s.parse::<u64>());
        let Some(Ok(seconds)) = seconds else {
            anyhow::bail!("--soak-seconds needs a number");
        };
        profile.soak_seconds = seconds;
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

const USAGE: &str = "usage: harness [short|long] [--kledger PATH] [--only crash,early,limits,faults,outage,bad,access,flood,hosts,soak] [--seed N] [--soak-seconds N]";

/// The first argument that is neither a profile, a known flag nor a flag's value.
fn unknown_argument(args: &[String]) -> Option<&str> {
    const WITH_VALUE: [&str; 4] = ["--kledger", "--only", "--seed", "--soak-seconds"];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if WITH_VALUE.contains(&a) {
            i += 2;
        } else if i == 0 && (a == "short" || a == "long") {
            i += 1;
        } else {
            return Some(a);
        }
    }
    None
}
