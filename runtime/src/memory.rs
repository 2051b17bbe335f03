//! Process-wide memory settings, applied first thing by `kledger` (and by the benchmarks, so
//! they measure what runs).

/// Turns transparent huge pages off for this process (Linux `PR_SET_THP_DISABLE`; elsewhere
/// nothing), as RocksDB's, Redis's and MongoDB's operators are told to.
///
/// mimalloc asks for huge pages for its arenas (`MADV_HUGEPAGE`), so each first touch of a
/// 2 MiB region zeroed all of it: 14–22% of the samples of the rebuild benchmark were the
/// kernel clearing pages. Without huge pages the vector rebuild ran 17% faster and the
/// processor no slower (docs/operations.md, "Memory"). A failure (an old kernel) is logged
/// by the caller and changes nothing else.
pub fn disable_transparent_huge_pages() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_thp_disable(true).map_err(|e| e.to_string())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn transparent_huge_pages_end_up_off_for_the_process() {
        super::disable_transparent_huge_pages().unwrap();
        assert!(nix::sys::prctl::get_thp_disable().unwrap());
    }
}
