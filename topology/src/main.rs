//! The `kledger` binary: the command line lives in the library ([`kledger_topology::cli`]), so
//! its commands are tested like the rest; this file only picks the allocator.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kledger_topology::cli::main()
}
